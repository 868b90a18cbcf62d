package main

import (
	"errors"
	"io/fs"
	"path/filepath"
)

type fileInfo struct {
	name string // slash-separated, relative to the directory
	size int64
}

// listFiles returns every regular file under the local directory dir (the
// demo lists its own database), in lexical order. dir may belong to an open
// database: a file its background work deletes between the directory read
// and the size lookup (a WAL segment, an obsolete table) is left out rather
// than failing the listing.
func listFiles(dir string) ([]fileInfo, error) {
	var out []fileInfo
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted since the directory was read
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, fileInfo{name: filepath.ToSlash(rel), size: fi.Size()})
		return nil
	})
	return out, err
}
