"""`knee recommend`: which k at which load, from one measured experiment: the speculation
model (speculation), the recommendation fitted from the raw files (advice) and its parts
(parts)."""
