package mayfly

import (
	"context"
	"errors"
	"fmt"
)

// Check reads every block of every live SSTable and verifies its checksum,
// its decoding, key order and the table's properties. It returns nil if all
// is well, or an error wrapping ErrCorruption for each damaged table (joined),
// each naming the file and byte offset. Check can run while the database is
// in use; it stops early with ctx's error.
func (db *DB) Check(ctx context.Context) error {
	rs, err := db.loadReadState()
	if err != nil {
		return err
	}
	defer rs.release()
	var errs []error
	for l, lvl := range rs.v.levels {
		for _, t := range lvl {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := t.reader.Check(); err != nil {
				errs = append(errs, fmt.Errorf("level %d table %s: %w", l, tableName(t.Meta.Num), err))
			}
		}
	}
	return errors.Join(errs...)
}
