"""Drawing measured things with Plotly: graphs of any GraphNodes, their layouts, the shared chart style."""
