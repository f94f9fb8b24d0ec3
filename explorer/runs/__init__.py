"""The application's runs: a person's session and the orchestration of a Playground run (lock, reconfigure, skip an
unchanged input, capture, plan, queue, time). Views only draw what these return."""
