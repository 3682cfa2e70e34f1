from hypothesis import settings

# The 2-core CI box is shared with numba compiles: judge correctness, not the speed of one example; and the
# same examples in every run (derandomize), so that a red main is a change's, never a new random draw's
# (explore more with --hypothesis-seed=N).
settings.register_profile("skewbench", deadline=None, max_examples=50, derandomize=True)
settings.load_profile("skewbench")
