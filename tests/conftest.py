from hypothesis import settings

# The 2-core CI box is shared with numba compiles: judge correctness, not the speed of one example.
settings.register_profile("skewbench", deadline=None, max_examples=50)
settings.load_profile("skewbench")
