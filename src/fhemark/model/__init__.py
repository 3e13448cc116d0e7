"""What is measured: the schemes' plaintext semantics and checks, parameters and security, the catalog
of operations and programs, circuits and workloads. Pure: no I/O, no drivers."""
