// Package crash holds Mayfly's fault-injection and crash tests. Everything
// is in _test.go files:
//
//   - model_test.go: the reference model of acknowledged writes and the
//     checker that decides whether a recovered database is a state the
//     writes could have left (a prefix of the write sequence that holds
//     every durable acknowledged write, no batch split, no invented value,
//     expiries exact);
//   - fault_test.go: a fixed workload on storage.Mem run once per storage
//     operation with one fault injected there (storage/faultfs), then
//     recovered after a simulated power loss and after a clean reopen; and
//     the same workload with a power-loss snapshot at every durability point;
//   - kill_test.go: a child process writing to a local directory, killed
//     with SIGKILL at random moments, recovered and verified by the parent;
//   - regress_test.go: deterministic reproductions of the engine bugs the
//     sweeps found; checker_test.go: the checker's own tests.
//
// In -short mode and under -race the sweeps try every k-th fault index,
// k chosen to fit -faults.budget; -faults.stride=1 forces all of them.
// TestKill runs -kills cycles (25 by default).
package crash
