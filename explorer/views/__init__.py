"""What is shown, as plain data and Plotly figures (no UI library): the Playground, the compiled side, the
lab, the report and its tables, take-away files and state links."""
