"""From a suite (YAML) to a frozen plan of jobs: what runs, on which library, parameters and threads."""
