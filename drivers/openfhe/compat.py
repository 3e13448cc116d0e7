"""What differs between the OpenFHE versions this driver runs (driver.json `versions`), in one place.

openfhe-python before 1.6 has no getter for the whole static key maps, for a plaintext's modulus,
for a binfhe context's ring side (N, Q, the bootstrapping key) or its JSON serialization. Each
function below makes the 1.6 call where the binding has it and the older equivalent where it
does not, or returns None: that fact is then not reported (capabilities `version_adaptations`
says which)."""

from contextlib import contextmanager

import numpy as np
import openfhe as ofhe

from jsonl_driver import Failure

MODERN = hasattr(ofhe.CryptoContext, "GetAllEvalMultKeys")
BINFHE_SERIALIZABLE = MODERN  # SerializeToFile takes binfhe keys and ciphertexts from 1.6 on

ADAPTATIONS = [] if MODERN else [
    "openfhe-python < 1.6: evaluation-key maps read per secret-key tag (GetEvalMultKeyVector, "
    "GetEvalAutomorphismKeyMap); which automorphism keys exist is not readable, so rotation and EvalSum keys "
    "are made for every step asked (untimed); the EvalSum radix is not probed (the conservative path)",
    "openfhe-python < 1.6: ops whose calls the binding lacks are unsupported (BFV/BGV mul_scalar: "
    "EvalMultNoCheck; CKKS mul_scalar: EvalMultInPlace; key_switch: KeySwitch; tfhe_bool mux: CMUX)",
    "openfhe-python < 1.6: plaintext sizes not reported (no Plaintext.GetElementModulus); decode's timed call "
    "is GetPackedValue / GetRealPackedValue, a Python list made an array (no *Array getters)",
    "openfhe-python < 1.6: tfhe_bool sets report n and q only (no GetN, GetQ, GetBTKey or JSON serialization "
    "of a BinFHEContext): N, Q, the key-switching and RGSW bases, the secret's distribution and the key and "
    "ciphertext sizes are not reported, and the set's security is not estimated; its p_fail is not stated "
    "(fhemark's table is 1.6's, whose sets have the same names but other parameters)",
]


@contextmanager
def older_binding():
    """A call an older binding lacks (KeySwitch, EvalMultNoCheck, CMUX ... before 1.6) makes the op
    unsupported at that version, not the driver's slip."""
    try:
        yield
    except AttributeError as exc:
        if MODERN or "openfhe" not in str(exc):
            raise
        raise Failure("unsupported", "openfhe-python < 1.6: %s" % exc) from exc


def _per_tag(get, tags):
    out = {}
    for tag in tags:
        try:
            out[tag] = get(tag)
        except RuntimeError:  # that tag has no key in the map
            pass
    return out


def all_mult_keys(cc, tags):
    """Every relinearization key vector by secret-key tag (`tags`: the tags this process made)."""
    return dict(cc.GetAllEvalMultKeys()) if MODERN else _per_tag(cc.GetEvalMultKeyVector, tags)


def all_automorphism_keys(cc, tags):
    return dict(cc.GetAllEvalAutomorphismKeys()) if MODERN else _per_tag(cc.GetEvalAutomorphismKeyMap, tags)


def existing_automorphism_indices(cc, tag):
    """The automorphism indices with a key for `tag`; an empty set where the binding cannot say."""
    return set(cc.GetExistingEvalAutomorphismKeyIndices(tag)) if MODERN else set()


def automorphism_indices_without_key(cc, tag, indices):
    """Which of `indices` lack a key for `tag`; all of them where the binding cannot say."""
    return set(cc.GetEvalAutomorphismNoKeyIndices(tag, indices)) if MODERN else set(indices)


def packed_values(pt, real):
    """The call that decodes a plaintext's slots into an array: before 1.6 the binding returns a list
    (GetRealPackedValue, GetPackedValue), turned into one inside the same call."""
    if hasattr(pt, "GetPackedValueArray"):
        return pt.GetRealPackedValueArray if real else pt.GetPackedValueArray
    get = pt.GetRealPackedValue if real else pt.GetPackedValue
    return lambda: np.asarray(get())


def element_modulus(pt):
    return int(pt.GetElementModulus()) if hasattr(pt, "GetElementModulus") else None


def binfhe_ring(cc):
    """(N, Q, bootstrapping key) of a binfhe context; (None, None, None) before 1.6."""
    if not hasattr(cc, "GetN"):
        return None, None, None
    return int(cc.GetN()), int(cc.GetQ()), cc.GetBTKey()
