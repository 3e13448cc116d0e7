"""The orchestrator's side of the driver protocol: the message models, the registry of drivers,
their builds, one supervised process each, and the cross-driver conformance cases."""
