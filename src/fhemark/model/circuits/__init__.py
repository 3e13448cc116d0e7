"""Boolean circuits written once: built here as language-neutral gate netlists
(PROTOCOL-bits.md), evaluated in plaintext to check drivers, counted for the
cost model."""

from .arith import carry_save_sum, compare_lt, kogge_stone_add, ripple_carry_add
from .netlist import Builder, Netlist

__all__ = ["Builder", "Netlist", "carry_save_sum", "compare_lt", "kogge_stone_add", "ripple_carry_add"]
