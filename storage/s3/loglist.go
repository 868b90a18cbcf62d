package s3

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mayflydb/mayfly/storage"
)

var (
	_ storage.LogLister   = (*Store)(nil)
	_ storage.LogReleaser = (*Store)(nil)
)

// ListLogs implements storage.LogLister with one LIST of dir (one per 1000
// keys): every log's parts, sizes included, come back in the listing, so
// the readers it returns are built without a request. A reader presents
// parts 1, 2, … up to the first gap, as Open does. Plain objects under dir
// are left out.
func (s *Store) ListLogs(dir string) ([]storage.ListedLog, error) {
	if err := checkPath(dir); err != nil {
		return nil, err
	}
	objs, err := s.listKeys(s.key(dir) + "/")
	if err != nil {
		return nil, s.wrap("list logs", dir, err)
	}
	byLog := make(map[string][]partInfo)
	for _, o := range objs {
		log, n, ok := splitPart(o.key)
		if !ok {
			continue
		}
		name, ok := strings.CutPrefix(log, s.prefix)
		if !ok || checkName(name) != nil {
			continue
		}
		byLog[name] = append(byLog[name], partInfo{n: n, key: o.key, size: o.size})
	}
	logs := make([]storage.ListedLog, 0, len(byLog))
	for name, parts := range byLog {
		sort.Slice(parts, func(i, j int) bool { return parts[i].n < parts[j].n })
		l := storage.ListedLog{Name: name}
		if parts[0].n == 1 {
			l.Reader = s.partsReader(name, parts)
		} else {
			l.FenceOnly = true
			for _, p := range parts {
				l.FenceOnly = l.FenceOnly && p.size == 0
			}
		}
		logs = append(logs, l)
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].Name < logs[j].Name })
	return logs, nil
}

// partsReader presents parts (sorted, starting at part 1) up to the first
// gap, skipping empty parts.
func (s *Store) partsReader(name string, parts []partInfo) *reader {
	r := &reader{s: s, name: name}
	for i, p := range parts {
		if p.n != int64(i+1) {
			break // a gap: what follows cannot continue the log
		}
		if p.size > 0 {
			r.parts = append(r.parts, span{key: p.key, off: r.size, size: p.size})
			r.size += p.size
		}
	}
	return r
}

// ReleaseLog implements storage.LogReleaser. Its writer uploads non-empty
// parts in order from part 2 on, and a fence fills every number from the
// writer's next part upwards with empty parts (see FenceLog), so the marker
// to keep is the lowest empty part above the newest non-empty one (and
// above part 1, the empty part CreateLog writes). A log with no such part
// was never fenced and is removed whole. The other parts are deleted:
// fence parts above the marker first, then the rest newest first, so that
// an interrupted release leaves a prefix of the log and the same marker.
// It costs one LIST and one DELETE per part removed.
func (s *Store) ReleaseLog(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	parts, err := s.listParts(name)
	if err != nil {
		return false, s.wrap("release log", name, err)
	}
	newestData := int64(1)
	for _, p := range parts {
		if p.size > 0 {
			newestData = max(newestData, p.n)
		}
	}
	marker := int64(-1)
	for _, p := range parts {
		if p.size == 0 && p.n > newestData {
			marker = p.n
			break
		}
	}
	var doomed []string
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; p.n > marker && marker > 0 {
			doomed = append(doomed, p.key)
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; p.n < marker || marker < 0 {
			doomed = append(doomed, p.key)
		}
	}
	for _, k := range doomed {
		_, err := s.client.DeleteObject(s.ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
		if err != nil && !isNotFound(err) {
			return false, s.wrap("release log", name, err)
		}
	}
	return marker > 0, nil
}
