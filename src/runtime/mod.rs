//! The runtime: sessions on disk, bindings, inbox, process spawning, coordinator and dispatcher. Everything here may do I/O.
