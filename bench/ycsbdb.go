package bench

// ycsbDB runs YCSB's operations on an Engine. A record is stored as one
// value per key:
//
//	record := field*            (fields in name order)
//	field  := uvarint(len(name)) name uvarint(len(value)) value

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// ycsbOps are the operation types reported, in report order.
var ycsbOps = []string{"read", "update", "insert", "scan", "rmw"}

// opHist is one operation type's latencies and the slowest of them.
type opHist struct {
	h   Hist
	max time.Duration
}

func (o *opHist) record(d time.Duration) {
	o.h.Record(d)
	o.max = max(o.max, d)
}

func (o *opHist) merge(x *opHist) {
	o.h.Merge(&x.h)
	o.max = max(o.max, x.max)
}

// ycsbThread is one thread's state: its latencies by operation type and
// the engine calls of its current transaction ("r" read, "w" write).
type ycsbThread struct {
	ops      map[string]*opHist
	calls    []byte
	dst      []byte
	val      []byte
	scanRows int64
	scanMax  int
}

type ycsbThreadKey struct{}

func threadOf(ctx context.Context) *ycsbThread { return ctx.Value(ycsbThreadKey{}).(*ycsbThread) }

func (t *ycsbThread) record(op string, d time.Duration) {
	o := t.ops[op]
	if o == nil {
		o = &opHist{}
		t.ops[op] = o
	}
	o.record(d)
}

// errYCSBMiss is returned when a read does not find a key YCSB loaded or
// acknowledged.
var errYCSBMiss = errors.New("bench: ycsb read missed a written key")

// ycsbDB is go-ycsb's DB over an Engine; it times each engine call.
type ycsbDB struct{ e Engine }

var _ ycsb.DB = ycsbDB{}

func (ycsbDB) Close() error { return nil }

func (ycsbDB) InitThread(ctx context.Context, _, _ int) context.Context {
	return context.WithValue(ctx, ycsbThreadKey{}, &ycsbThread{ops: map[string]*opHist{}})
}

func (ycsbDB) CleanupThread(context.Context) {}

func (d ycsbDB) Read(ctx context.Context, _ string, key string, _ []string) (map[string][]byte, error) {
	t := threadOf(ctx)
	t.calls = append(t.calls, 'r')
	t0 := time.Now()
	v, ok, err := d.e.Get([]byte(key), t.dst[:0])
	t.record("read", time.Since(t0))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", errYCSBMiss, key)
	}
	t.dst = v
	return ycsbDecode(v)
}

func (d ycsbDB) Scan(ctx context.Context, _ string, startKey string, count int, _ []string) ([]map[string][]byte, error) {
	t := threadOf(ctx)
	t.calls = append(t.calls, 's')
	var rows []map[string][]byte
	t0 := time.Now()
	it, err := d.e.NewIter()
	if err != nil {
		return nil, err
	}
	for ok := it.SeekGE([]byte(startKey)); ok && len(rows) < count; ok = it.Next() {
		row, err := ycsbDecode(it.Value())
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("%s: %w", it.Key(), err)
		}
		rows = append(rows, row)
	}
	err = it.Close()
	t.record("scan", time.Since(t0))
	t.scanRows += int64(len(rows))
	t.scanMax = max(t.scanMax, len(rows))
	return rows, err
}

func (d ycsbDB) Update(ctx context.Context, _ string, key string, values map[string][]byte) error {
	return d.put(ctx, "update", key, values)
}

func (d ycsbDB) Insert(ctx context.Context, _ string, key string, values map[string][]byte) error {
	return d.put(ctx, "insert", key, values)
}

func (d ycsbDB) put(ctx context.Context, op, key string, values map[string][]byte) error {
	t := threadOf(ctx)
	t.calls = append(t.calls, 'w')
	t.val = ycsbEncode(t.val[:0], values)
	t0 := time.Now()
	err := d.e.Put([]byte(key), t.val)
	t.record(op, time.Since(t0))
	return err
}

func (ycsbDB) Delete(context.Context, string, string) error {
	return errors.New("bench: ycsb delete is not part of the core workloads")
}

// ycsbEncode appends a record to dst: for each field in name order, a
// uvarint name length, the name, a uvarint value length and the value.
func ycsbEncode(dst []byte, values map[string][]byte) []byte {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendUvarint(dst, uint64(len(values[k])))
		dst = append(dst, values[k]...)
	}
	return dst
}

// ycsbDecode parses a record written by ycsbEncode; its values alias b.
func ycsbDecode(b []byte) (map[string][]byte, error) {
	row := make(map[string][]byte, ycsbFields)
	for len(b) > 0 {
		var parts [2][]byte
		for i := range parts {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return nil, errors.New("bench: malformed ycsb record")
			}
			parts[i], b = b[w:w+int(n)], b[w+int(n):]
		}
		row[string(parts[0])] = parts[1]
	}
	return row, nil
}
