package bench

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The docs cite results files by name and bench/HISTORY.md sections by
// title. These tests keep both kinds of citation resolvable, and keep
// bench/results/ to the files something cites.

var (
	resultsName = regexp.MustCompile(`\b(?:results|rsscheck)-\d{8}T\d{6}Z\.(?:jsonl|txt)\b`)
	// bench/HISTORY.md, "Title" [, "Title" | and "Title"]...
	historyCite = regexp.MustCompile("bench/HISTORY\\.md`?(?:\\]\\([^)]*\\))?,?((?:\\s*(?:,|and)?\\s*\"[^\"]+\")+)")
	quoted      = regexp.MustCompile(`"([^"]+)"`)
	// A line break inside a comment or a markdown paragraph.
	lineBreak = regexp.MustCompile(`\s*\n\s*(?://\s*)?`)
)

// citingFiles returns the repository's markdown and Go files, keyed by
// their path from the repository root, with line breaks joined so that a
// citation wrapped over two lines reads as one.
func citingFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == filepath.Join("bench", "results") || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") && !strings.HasSuffix(path, ".go") {
			return nil
		}
		if strings.HasSuffix(path, "results_test.go") && filepath.Dir(rel) == "bench" {
			return nil // this file's own examples
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = lineBreak.ReplaceAllString(string(b), " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCitedResultsFilesExist(t *testing.T) {
	cited := map[string][]string{}
	for path, text := range citingFiles(t) {
		for _, name := range resultsName.FindAllString(text, -1) {
			cited[name] = append(cited[name], path)
		}
	}
	if len(cited) == 0 {
		t.Fatal("no document cites a results file; the run of record must")
	}
	for name, by := range cited {
		if _, err := os.Stat(filepath.Join("results", name)); err != nil {
			t.Errorf("%s cite(s) %s: %v", strings.Join(by, ", "), name, err)
		}
	}
	entries, err := os.ReadDir("results")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if cited[e.Name()] == nil {
			t.Errorf("bench/results/%s is cited by no document: delete it or cite it", e.Name())
		}
	}
}

// historyHeadings returns the titles of bench/HISTORY.md's sections.
func historyHeadings(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("HISTORY.md")
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "#") {
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(l, "#")))
		}
	}
	return hs
}

// resolves reports whether a cited title names a heading: the heading
// itself, or its start up to a colon or a parenthesis.
func resolves(title string, headings []string) bool {
	return slices.ContainsFunc(headings, func(h string) bool {
		rest, ok := strings.CutPrefix(h, title)
		return ok && (rest == "" || strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ("))
	})
}

func TestHistoryCitationsResolve(t *testing.T) {
	headings := historyHeadings(t)
	n := 0
	for path, text := range citingFiles(t) {
		for _, m := range historyCite.FindAllStringSubmatch(text, -1) {
			for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
				n++
				if !resolves(q[1], headings) {
					t.Errorf("%s cites bench/HISTORY.md, %q: no such section", path, q[1])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("found no citation of a bench/HISTORY.md section; the pattern no longer matches the docs")
	}
}

func TestResolves(t *testing.T) {
	hs := []string{"Memtable size: RSS against write amplification", "Read path Go heap (branch scanheap)", "Full scans"}
	for _, c := range []struct {
		title string
		want  bool
	}{
		{"Memtable size", true},
		{"Memtable size: RSS against write amplification", true},
		{"Read path Go heap", true},
		{"Full scans", true},
		{"Memtable", false},
		{"Full scan", false},
		{"Point reads", false},
	} {
		if got := resolves(c.title, hs); got != c.want {
			t.Errorf("resolves(%q) = %v, want %v", c.title, got, c.want)
		}
	}
}
