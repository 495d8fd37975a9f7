"""Real-shaped Go and Rust tasks for the guard's tests, laid out as a task image holds them.

`gorow` (Go): the project's modules vendored (`vendor/`, ignored by git, `GOFLAGS=-mod=vendor`),
a module cache in `GOPATH` (filled from a file proxy made here, offline), the PoC a module of
its own (`pocs/go.mod`, `go.sum`, `poc.go`) that `run.sh` runs against the tree graded.
`rsrow` (Rust): a Cargo crate with a vendored path dependency, `CARGO_HOME` set, offline, the
PoC a harness crate (`pocs/Cargo.toml`, `pocs/src/main.rs`) that `run.sh` builds and runs.
"""
