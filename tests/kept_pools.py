"""The test drivers' pools (PROTOCOL.md "Pool"): made from a request's inputs and steps, kept under
an id with the setup, read by the id alone."""

KEPT: dict = {}  # (setup_id, pool id) -> the values of a pool a request asked to keep


def pool_values(req: dict, vec, make) -> dict:
    """A request's pool: made from its inputs and steps (and kept, given an id), or read by its id.
    vec(wire vector) -> array; make(step, values so far) -> the step's value."""
    spec = req.get("pool") or {}
    if spec and not spec.get("steps"):
        return KEPT[(req["setup_id"], spec["id"])]
    pool = {k: vec(v) for k, v in spec.get("inputs", {}).items()}
    for st in spec.get("steps", []):
        pool[st["out"]] = make(st, pool)
    if spec.get("id") is not None:
        KEPT[(req["setup_id"], spec["id"])] = pool
    return pool
