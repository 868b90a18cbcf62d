package crash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

var (
	killCycles = flag.Int("kills", 25, "number of SIGKILL cycles TestKill runs")
	killSeed   = flag.Uint64("kill.seed", 0, "seed of TestKill's random choices (0: from the time; the seed used is logged)")
)

// Environment of the child process.
const (
	killChildDir   = "MAYFLY_CRASH_KILL_DIR"
	killChildCycle = "MAYFLY_CRASH_KILL_CYCLE"
	killChildSeed  = "MAYFLY_CRASH_KILL_SEED"
)

// ttlRange is how much later than the call's start an ExpireAfter deadline
// may be when the call was never answered.
const pendingSlack = 10 * time.Minute

func killOptions() *mayfly.Options {
	return &mayfly.Options{
		MemtableSize:          32 << 10,
		BlockSize:             1024,
		TargetFileSize:        32 << 10,
		LBaseMaxBytes:         128 << 10,
		L0CompactionThreshold: 2,
		BlockCacheSize:        1 << 20,
	}
}

// TestKillChild is the child process of TestKill: it is run only when the
// environment names a directory, and writes there until it is killed.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildDir)
	if dir == "" {
		t.Skip("helper process of TestKill")
	}
	os.Exit(killChild(dir))
}

// killChild opens the database and writes forever, reporting on fd 3 each
// operation before it starts ("B <json op>") and after it returns
// ("A <id> [deadline upper bound]" or "E <id> <error>"). The parent holds
// those lines, so they survive the SIGKILL.
func killChild(dir string) int {
	acks := os.NewFile(3, "acks")
	emit := func(format string, args ...any) {
		// One write per line; lines are far below PIPE_BUF, so atomic.
		if _, err := fmt.Fprintf(acks, format+"\n", args...); err != nil {
			os.Exit(5)
		}
	}
	cycle, _ := strconv.Atoi(os.Getenv(killChildCycle))
	seed, _ := strconv.ParseUint(os.Getenv(killChildSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, uint64(cycle)))
	// A child whose parent died must not write forever.
	time.AfterFunc(2*time.Minute, func() { os.Exit(6) })

	db, err := mayfly.Open(dir, killOptions())
	if err != nil {
		emit("X open: %v", strings.ReplaceAll(err.Error(), "\n", " "))
		return 3
	}
	emit("R")
	var mine []string
	pad := func() string { return strings.Repeat("p", rng.IntN(200)) }
	for id := 0; ; id++ {
		o := op{ID: id}
		fresh := func(i int) string {
			k := fmt.Sprintf("c%04d-%07d-%d", cycle, id, i)
			mine = append(mine, k)
			return k
		}
		val := func(k string) string { return fmt.Sprintf("%s@%d/%d#%s", k, cycle, id, pad()) }
		var exact int64 // ExpireAt deadline, 0 for none
		if rng.IntN(4) == 0 {
			exact = time.Now().Add(time.Hour + time.Duration(rng.IntN(60000))*time.Millisecond).UnixMilli()
		}
		after := false // ExpireAfter(time.Hour)
		x := rng.IntN(100)
		switch {
		case x < 30:
			o.Kind = "put"
		case x < 50:
			o.Kind, o.Sync = "put", true
		case x < 62:
			o.Kind, o.Sync = "batch", true
		case x < 67:
			o.Kind = "batch"
		case x < 77:
			o.Kind, o.Sync, after, exact = "ttl", true, true, 0
		case x < 87:
			o.Kind, o.Sync = "delete", rng.IntN(2) == 0
		default:
			o.Kind, o.Sync = "hot", rng.IntN(2) == 0
		}
		t0 := time.Now().UnixMilli()
		ttlOf := func() (mayfly.TTL, mut) {
			switch {
			case after:
				return mayfly.ExpireAfter(time.Hour), mut{Expires: true, ExpLo: t0 + time.Hour.Milliseconds(), ExpHi: t0 + time.Hour.Milliseconds() + pendingSlack.Milliseconds()}
			case exact != 0:
				return mayfly.ExpireAt(time.UnixMilli(exact)), mut{Expires: true, ExpLo: exact, ExpHi: exact}
			}
			return mayfly.NoExpiry(), mut{}
		}
		var call func() error
		wo := mayfly.NoSync
		if o.Sync {
			wo = mayfly.Sync
		}
		switch o.Kind {
		case "put", "ttl", "hot":
			k := fresh(0)
			if o.Kind == "hot" {
				k = fmt.Sprintf("hot%02d", rng.IntN(16))
			}
			v := val(k)
			ttl, m := ttlOf()
			m.Key, m.Val = k, v
			o.Muts = []mut{m}
			call = func() error { return db.PutWith([]byte(k), []byte(v), ttl, wo) }
		case "delete":
			k := fmt.Sprintf("hot%02d", rng.IntN(16))
			if len(mine) > 0 && rng.IntN(2) == 0 {
				k = mine[rng.IntN(len(mine))]
			}
			o.Muts = []mut{{Key: k, Del: true}}
			call = func() error { return db.DeleteWith([]byte(k), wo) }
		case "batch":
			b := db.NewBatch()
			n := 2 + rng.IntN(5)
			for i := range n {
				k := fresh(i)
				if i == n-1 && rng.IntN(3) == 0 {
					k = fmt.Sprintf("hot%02d", rng.IntN(16))
				}
				v := val(k)
				ttl, m := ttlOf()
				m.Key, m.Val = k, v
				if err := b.PutTTL([]byte(k), []byte(v), ttl); err != nil {
					emit("X batch: %v", err)
					return 4
				}
				o.Muts = append(o.Muts, m)
			}
			call = func() error { return b.Write(wo) }
		}
		line, err := json.Marshal(&o)
		if err != nil {
			emit("X json: %v", err)
			return 4
		}
		emit("B %s", line)
		if err := call(); err != nil {
			emit("E %d %s", id, strings.ReplaceAll(err.Error(), "\n", " "))
			return 2
		}
		if after {
			emit("A %d %d", id, time.Now().UnixMilli()+time.Hour.Milliseconds())
		} else {
			emit("A %d", id)
		}
	}
}

// childResult is what the parent learnt from one child.
type childResult struct {
	ops        []*op
	ready      bool
	killed     bool
	exitErr    error
	output     string // the child's stdout and stderr
	protoErr   string // an X or E line
	delay      time.Duration
	afterReady bool
}

// runChild starts a child writing into dir, kills it after a random delay
// and returns the operations it reported.
func runChild(t *testing.T, dir string, cycle int, seed uint64, rng *rand.Rand) childResult {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		killChildDir+"="+dir,
		killChildCycle+"="+strconv.Itoa(cycle),
		killChildSeed+"="+strconv.FormatUint(seed, 10))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()

	var res childResult
	var mu sync.Mutex
	byID := map[int]*op{}
	ready := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			switch {
			case line == "R":
				res.ready = true
				close(ready)
			case strings.HasPrefix(line, "B "):
				o := &op{Status: pending}
				if err := json.Unmarshal([]byte(line[2:]), o); err != nil {
					// A line cut by the kill is not newline-terminated and
					// so never reaches here; anything else is a bug.
					res.protoErr = fmt.Sprintf("bad line %q: %v", line, err)
				} else {
					res.ops = append(res.ops, o)
					byID[o.ID] = o
				}
			case strings.HasPrefix(line, "A "):
				f := strings.Fields(line)
				id, _ := strconv.Atoi(f[1])
				if o := byID[id]; o != nil {
					o.Status = acked
					if len(f) > 2 {
						hi, _ := strconv.ParseInt(f[2], 10, 64)
						for i := range o.Muts {
							if o.Muts[i].Expires && o.Muts[i].ExpHi != o.Muts[i].ExpLo {
								o.Muts[i].ExpHi = hi
							}
						}
					}
				} else {
					res.protoErr = "ack of unknown op: " + line
				}
			default:
				res.protoErr = line
			}
			mu.Unlock()
		}
	}()

	res.afterReady = rng.IntN(5) != 0
	if res.afterReady {
		res.delay = time.Duration(20+rng.IntN(281)) * time.Millisecond
		select {
		case <-ready:
		case <-readDone:
		case <-time.After(runTimeout):
		}
	} else {
		// Sometimes kill early: during Open and recovery.
		res.delay = time.Duration(rng.IntN(150)) * time.Millisecond
	}
	time.Sleep(res.delay)
	killErr := cmd.Process.Kill()
	res.exitErr = cmd.Wait()
	<-readDone
	pr.Close()
	var ee *exec.ExitError
	if errors.As(res.exitErr, &ee) && !ee.Exited() {
		res.killed = killErr == nil
	}
	res.output = out.String()
	return res
}

// TestKill crashes a writing process with SIGKILL again and again, each time
// recovering the database in this process and checking it against the
// writes the child acknowledged before it died.
func TestKill(t *testing.T) {
	// Mostly waiting on a child process: overlap it with the CPU-bound
	// sweeps.
	t.Parallel()
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill seed %d (rerun with -kill.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	base := map[string]row{}
	start := time.Now()
	var (
		survived, totalOps, ackedOps, syncedOps, earlyKills int
		lostUnsynced, lostOps                               int
	)
	for cycle := range *killCycles {
		res := runChild(t, dir, cycle, seed, rng)
		if res.protoErr != "" || !res.killed {
			t.Fatalf("cycle %d: child did not run until killed (exit %v, protocol %q); output:\n%s", cycle, res.exitErr, res.protoErr, res.output)
		}
		if !res.ready {
			earlyKills++
		}
		ops := res.ops
		loSync, loAll := 0, 0
		for i, o := range ops {
			totalOps++
			if o.Status == acked {
				ackedOps++
				loAll = i + 1
				if o.Sync {
					syncedOps++
					loSync = i + 1
				}
			}
		}
		for i, o := range ops {
			if o.Status == pending && i != len(ops)-1 {
				t.Fatalf("cycle %d: op %d unanswered but not the last", cycle, o.ID)
			}
		}

		db, err := mayfly.Open(dir, killOptions())
		if err != nil {
			t.Fatalf("cycle %d (killed %v after %s): reopen failed: %v\nchild output:\n%s",
				cycle, res.delay, map[bool]string{true: "ready", false: "start"}[res.afterReady], err, res.output)
		}
		fail := func(format string, args ...any) {
			db.Close()
			t.Fatalf("cycle %d (killed %v after %s, %d ops, %d acked): "+format,
				append([]any{cycle, res.delay, map[bool]string{true: "ready", false: "start"}[res.afterReady], len(ops), loAll}, args...)...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		if err := db.Check(ctx); err != nil {
			cancel()
			fail("Check: %v", err)
		}
		cancel()
		universe := universeOf(base, ops)
		observed, now, probs, err := observe(db, universe)
		if err != nil {
			fail("reading: %v", err)
		}
		if len(probs) > 0 {
			fail("%s", joinProblems(probs))
		}
		// Every write acknowledged with Sync must be there, and what is
		// there must be a prefix of the writes begun.
		v := checkState(base, ops, loSync, len(ops), observed, now)
		if !v.OK {
			fail("%s", joinProblems(v.Problems))
		}
		// Unsynced writes survive a process crash only once the WAL's
		// background flusher has handed them to the OS ("normally within
		// microseconds", WriteOptions): count the cycles that lost some.
		if va := checkState(base, ops, loAll, len(ops), observed, now); !va.OK {
			lostUnsynced++
			lostOps += loAll - v.Prefix
			if lostUnsynced <= 3 {
				t.Logf("cycle %d: the last %d acknowledged unsynced operations were lost (recovered prefix %d of %d begun, %d acked):\n%s",
					cycle, loAll-v.Prefix, v.Prefix, len(ops), loAll, joinProblems(va.Problems))
			}
		}
		base = map[string]row{}
		for k, o := range observed {
			if o.Found {
				base[k] = o.asRow()
			}
		}
		if err := db.Close(); err != nil {
			t.Fatalf("cycle %d: Close: %v", cycle, err)
		}
		survived++
		if testing.Verbose() && (cycle < 5 || cycle%50 == 0) {
			t.Logf("cycle %d: killed after %v (%s), %d ops begun, %d acked, %d keys live",
				cycle, res.delay, map[bool]string{true: "from ready", false: "from start"}[res.afterReady], len(ops), loAll, len(base))
		}
	}
	t.Logf("survived %d/%d kill cycles in %v: %d ops begun, %d acknowledged (%d synced), %d kills before the child was ready, %d live keys at the end; %d cycles lost %d acknowledged unsynced operations (allowed)",
		survived, *killCycles, time.Since(start).Round(time.Millisecond), totalOps, ackedOps, syncedOps, earlyKills, len(base), lostUnsynced, lostOps)
}
