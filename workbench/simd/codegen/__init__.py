"""VLIW code generation for the NVE (seed 003 §4–5): task graphs, list and modulo scheduling,
coefficient packing, and cycle-by-cycle execution of the generated programs."""
