package main

// Helpers shared by the commands that read a database's files directly
// (sst dump, wal dump, manifest dump, check, stats' expiry histogram),
// without going through mayfly.Open.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/urfave/cli/v3"
)

// openTable opens table num of a database through its storage.
func openTable(s storage.Storage, num uint64) (*sstable.Reader, error) {
	return openTableObject(s, tableName(num), tableName(num))
}

// openTableObject opens the table stored as name in s; errors call it
// display.
func openTableObject(s storage.Storage, name, display string) (*sstable.Reader, error) {
	f, err := s.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := sstable.Open(f, sstable.ReaderOptions{Name: display})
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// Object names, as the engine spells them (see names.go).
func tableName(num uint64) string { return fmt.Sprintf("sst/%06d.sst", num) }
func logName(num uint64) string   { return fmt.Sprintf("wal/%06d.wal", num) }

// parseNum extracts NNNNNN from "dir/NNNNNN.ext" (or a bare "NNNNNN.ext").
func parseNum(name, ext string) (uint64, bool) {
	s, found := strings.CutSuffix(path.Base(name), ext)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// msTime turns Unix milliseconds into a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// msTimePtr is msTime for an optional JSON field.
func msTimePtr(ms int64) *time.Time {
	t := msTime(ms)
	return &t
}

// fmtMS formats Unix milliseconds for people.
func fmtMS(ms int64) string { return msTime(ms).Format("2006-01-02T15:04:05.000Z07:00") }

// quoteKey renders a key for people: Go-quoted, so that binary bytes and
// spaces are visible.
func quoteKey(k []byte) string { return strconv.Quote(string(k)) }

// keyJSON is a key in JSON output: the key as a string, plus its hex form
// when it is not valid UTF-8 (the string then has replacement characters).
type keyJSON struct {
	Key    string `json:"key"`
	KeyHex string `json:"key_hex,omitempty"`
}

func jsonKey(k []byte) keyJSON {
	j := keyJSON{Key: string(k)}
	if !utf8.Valid(k) {
		j.KeyHex = fmt.Sprintf("%x", k)
	}
	return j
}

// ikeyJSON is a decoded internal key.
type ikeyJSON struct {
	keyJSON
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
}

func decodeIKey(ikey []byte) *ikeyJSON {
	if len(ikey) == 0 {
		return nil
	}
	ukey, seq, flags, ok := format.SplitInternalKey(ikey)
	if !ok {
		return &ikeyJSON{keyJSON: keyJSON{KeyHex: fmt.Sprintf("%x", ikey)}, Kind: "malformed"}
	}
	return &ikeyJSON{keyJSON: jsonKey(ukey), Seq: seq, Kind: rowKind(flags)}
}

func (k *ikeyJSON) String() string {
	if k == nil {
		return "-"
	}
	if k.Kind == "malformed" {
		return "malformed(" + k.KeyHex + ")"
	}
	return fmt.Sprintf("%s#%d", strconv.Quote(k.Key), k.Seq)
}

func rowKind(flags uint8) string {
	switch {
	case flags&format.FlagTombstone != 0:
		return "delete"
	case flags&format.FlagDeadline != 0:
		return "deadline"
	case flags&format.FlagMerge != 0:
		return "merge"
	}
	return "put"
}

// flagNames lists the names of the row flags set in f.
func flagNames(f uint8) []string {
	names := []string{}
	for _, fl := range []struct {
		bit  uint8
		name string
	}{{format.FlagTombstone, "tombstone"}, {format.FlagHasTS, "ts"}, {format.FlagHasExpire, "expire"}, {format.FlagDeadline, "deadline"}, {format.FlagMerge, "merge"}} {
		if f&fl.bit != 0 {
			names = append(names, fl.name)
		}
	}
	if f&^format.KnownFlags != 0 {
		names = append(names, fmt.Sprintf("unknown(%#x)", f&^format.KnownFlags))
	}
	return names
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// noArgs fails with a usage error if cmd got positional arguments.
func noArgs(cmd *cli.Command) error {
	if cmd.Args().Present() {
		return usagef("%s: unexpected arguments %q", cmd.Name, cmd.Args().Slice())
	}
	return nil
}

// groupCommand is a command that only holds subcommands.
func groupCommand(name, usage string, subs ...*cli.Command) *cli.Command {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.Name
	}
	return withUsageErrors(&cli.Command{
		Name:     name,
		Usage:    usage,
		Commands: subs,
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usagef("%s: unknown subcommand %q (want %s)", name, cmd.Args().First(), strings.Join(names, ", "))
			}
			return usagef("%s: no subcommand given (want %s)", name, strings.Join(names, ", "))
		},
	})
}

// jsonLineEncoder writes one compact JSON value per line.
func jsonLineEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
