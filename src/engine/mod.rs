//! The pure engine: state, reducer, effects, guards. No I/O, clock, randomness or environment.
