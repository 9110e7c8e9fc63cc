package hook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Anchor is a record's anchor as the server reports it.
type Anchor struct {
	Anchor string `json:"anchor"`
	State  string `json:"state"`
}

// Record is the part of a memory_get record the anchor check reads.
type Record struct {
	ID        string   `json:"id"`
	Namespace string   `json:"namespace"`
	Anchors   []Anchor `json:"anchors"`
}

// anchorRouteRecheck is how long a server found without memory_anchor_report
// is left alone before the hooks try again.
const anchorRouteRecheck = 24 * time.Hour

// checkAnchors resolves the path: anchors of the records session-start
// showed that live in the repository's own namespace against the checkout,
// and reports each whose state changed through memory_anchor_report (docs/design.md
// R-H). A path that exists under the checkout's root is available; one
// that does not, or any path when the session has no checkout, is
// unavailable. A server without memory_anchor_report is remembered for a
// day (a marker file in the cache), so old servers cost nothing.
func (r *run) checkAnchors(ctx context.Context, repo Repo, b *Bootstrap) error {
	marker := filepath.Join(r.cfg.CacheDir, "anchor-report-missing")
	if fi, err := os.Stat(marker); err == nil && r.cfg.Now().Sub(fi.ModTime()) < anchorRouteRecheck {
		return nil
	}
	recs, err := r.anchoredRecords(ctx, b)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Namespace != b.Namespace {
			continue // another scope's paths are not this checkout's
		}
		for _, a := range rec.Anchors {
			rel, ok := strings.CutPrefix(a.Anchor, "path:")
			if !ok {
				continue
			}
			state := pathState(repo.Root, rel)
			if state == "" || state == a.State {
				continue
			}
			args := map[string]any{"id": rec.ID, "anchor": a.Anchor, "state": state}
			err := r.client.Call(ctx, "memory_anchor_report", args, nil)
			if RouteMissing(err) {
				_ = writeFileAtomic(marker, nil)
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// anchoredRecords returns the shown records with their anchors: from the
// bootstrap items when the server sent anchors there, else from memory_get.
func (r *run) anchoredRecords(ctx context.Context, b *Bootstrap) ([]Record, error) {
	ids := make([]string, 0, len(b.Items))
	withAnchors := false
	for _, it := range b.Items {
		ids = append(ids, it.ID)
		withAnchors = withAnchors || it.Anchors != nil
	}
	if withAnchors {
		recs := make([]Record, len(b.Items))
		for i, it := range b.Items {
			ns := it.Namespace
			if ns == "" {
				ns = b.Namespace
			}
			recs[i] = Record{ID: it.ID, Namespace: ns, Anchors: it.Anchors}
		}
		return recs, nil
	}
	if len(ids) > maxGetIDs {
		ids = ids[:maxGetIDs]
	}
	var out struct {
		Records []Record `json:"records"`
	}
	if err := r.client.Call(ctx, "memory_get", map[string]any{"ids": ids}, &out); err != nil {
		return nil, err
	}
	return out.Records, nil
}

// maxGetIDs is memory_get's limit on ids.
const maxGetIDs = 50

// pathState resolves a path anchor against a checkout's root: available
// when it exists, unavailable when not (or when there is no checkout), ""
// for a path that is not relative or leaves the root (not ours to judge).
// Symbolic links are followed one component at a time, and a path that
// leaves the root through one — to an absolute target, or up past the
// root — is not judged either, so the hook never says what exists outside
// the checkout (docs/claude-code.md, "Anchors").
func pathState(root, rel string) string {
	if rel == "" || filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return ""
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return ""
	}
	if root == "" {
		return "unavailable"
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return ""
	}
	return walkInside(real, clean)
}

// maxLinks bounds the symbolic links one path may pass (as Linux's ELOOP).
const maxLinks = 40

// walkInside resolves rel under root (symlink-free) component by
// component: "unavailable" at the first missing one, "available" when all
// exist, "" when a link leads out of root, loops, or a step fails otherwise.
func walkInside(root, rel string) string {
	sep := string(filepath.Separator)
	todo := strings.Split(rel, sep)
	cur, links := root, 0
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		switch p {
		case "", ".":
			continue
		case "..": // only from a link's target
			if cur == root {
				return ""
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, p)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "unavailable"
			}
			return ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return ""
		}
		target, err := os.Readlink(next)
		if err != nil || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			// An absolute target is not followed, even one that names a
			// path inside root: a checkout's own links are relative.
			return ""
		}
		todo = append(strings.Split(filepath.Clean(target), sep), todo...)
	}
	return "available"
}
