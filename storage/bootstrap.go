package storage

import (
	"cmp"
	"context"
	"database/sql"
	"slices"

	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// Reasons a record is listed in the session-start packet (docs/design.md R-B6).
const (
	// ReasonCandidate: a candidate awaiting review.
	ReasonCandidate = "candidate"
	// ReasonDurable: an active durable record of the scope chain.
	ReasonDurable = "durable"
	// ReasonAnchorUnavailable: an active record with an anchor reported
	// unavailable (R-H2). A durable record with such an anchor keeps its
	// place among the durable records under this reason.
	ReasonAnchorUnavailable = "anchor-unavailable"
)

// DefaultBootstrapLimit is how many items Bootstrap returns when the query
// gives no limit: more than a 2,000-byte packet can hold.
const DefaultBootstrapLimit = 64

// BootstrapItem is one compact line of the session-start packet.
// Unavailable flags an item with an unavailable anchor, whatever its
// reason; its Count is 0 for an item without one.
type BootstrapItem struct {
	ID          string
	Namespace   string
	Type        string
	Title       string
	Reason      string
	Unavailable AnchorFlag
}

// BootstrapQuery selects the session-start packet of a scope chain.
// Namespaces is the chain, first to last (repeats are ignored); Limit caps
// the items returned (<= 0 means DefaultBootstrapLimit). The count covers
// every item, returned or not.
type BootstrapQuery struct {
	Namespaces []string
	Limit      int
}

// BootstrapList is the head of the packet's item list and the length of the
// whole list.
type BootstrapList struct {
	// Items are the first items of the packet, in packet order. When none
	// of them is listed for an unavailable anchor (ReasonAnchorUnavailable)
	// but a later one is, the first such one follows them, one past the
	// limit: the section stays within reach of a packet that makes room
	// for it (R-B6).
	Items []BootstrapItem
	// Total counts every item the packet would list with no limit: Total -
	// len(Items) more follow Items.
	Total int
}

// bootstrap_rank sections (migration 0005).
const (
	sectionCandidate   = 1
	sectionDurable     = 2
	sectionUnavailable = 3
)

// Bootstrap lists, for the namespaces of q, what a session should know at its
// start, in this order, each record once:
//
//  1. candidates awaiting review, namespace by namespace in chain order,
//     newest first;
//  2. active durable records: constraints, requirements, preferences, then
//     decisions and procedures; within a type by effective confidence, then
//     use (times returned plus times fetched), highest first; then by the
//     namespace's place in the chain and newest first. One with an
//     unavailable anchor is listed here with ReasonAnchorUnavailable;
//  3. the other active records (notes, summaries) with an unavailable
//     anchor, namespace by namespace, newest first.
//
// Superseded and deleted records are never listed. Everything is read from
// one snapshot, through the derived tables of migration 0005, so the cost
// does not grow with the number of records in the chain.
func (db *DB) Bootstrap(ctx context.Context, q BootstrapQuery) (BootstrapList, error) {
	chain := uniq(q.Namespaces)
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultBootstrapLimit
	}
	if len(chain) == 0 {
		return BootstrapList{}, nil
	}
	var out BootstrapList
	err := db.read(ctx, "bootstrap", func(tx *txn) (err error) {
		out, err = bootstrapTx(ctx, tx, chain, limit)
		return err
	})
	return out, err
}

// The statements Bootstrap runs once per namespace and section. SQLite
// re-prepared them inside sqlite3_step whenever the section bound to
// b.section = ?2 changed (a quarter of a packet's time); the unary + keeps
// the same index equality without that (TestSQL_NotReprepared).
const (
	bootstrapRankedSQL = `
		SELECT b.record_id, r.type, r.title, b.type_rank, b.confidence, b.uses
		FROM bootstrap_rank AS b JOIN records AS r ON r.id = b.record_id
		WHERE b.namespace = ?1 AND b.section = +?2
		ORDER BY b.type_rank, b.confidence DESC, b.uses DESC, b.record_id DESC
		LIMIT +?3`
	// The records with an unavailable anchor are few (anchors_state_idx
	// finds them) and drive the query; walking a section in packet order
	// and testing each record instead read every durable record of a
	// namespace when none is flagged.
	bootstrapUnavailableSQL = `
		SELECT b.record_id, r.type, r.title, b.type_rank, b.confidence, b.uses
		FROM (SELECT DISTINCT record_id FROM anchors WHERE state = 'unavailable') AS a
		CROSS JOIN bootstrap_rank AS b
		JOIN records AS r ON r.id = b.record_id
		WHERE b.record_id = a.record_id AND b.namespace = ?1 AND b.section = +?2
		ORDER BY b.type_rank, b.confidence DESC, b.uses DESC, b.record_id DESC
		LIMIT +?3`
)

// bootstrapTx lists the packet of chain, limit items at most.
func bootstrapTx(ctx context.Context, tx *txn, chain []string, limit int) (BootstrapList, error) {
	var out BootstrapList
	if err := tx.QueryRowContext(ctx, `
		SELECT COALESCE(SUM(n), 0) FROM bootstrap_counts
		WHERE namespace IN (SELECT value FROM json_each(?1))`, jsonList(chain),
	).Scan(&out.Total); err != nil {
		return BootstrapList{}, classify("bootstrap", err)
	}
	stmt, err := tx.PrepareContext(ctx, bootstrapRankedSQL)
	if err != nil {
		return BootstrapList{}, classify("bootstrap", err)
	}
	defer stmt.Close()

	cands, err := rankedTx(ctx, stmt, chain, sectionCandidate, limit)
	if err != nil {
		return BootstrapList{}, err
	}
	out.Items = append(out.Items, cands...)
	if len(out.Items) < limit {
		durable, err := rankedTx(ctx, stmt, chain, sectionDurable, limit-len(out.Items))
		if err != nil {
			return BootstrapList{}, err
		}
		out.Items = append(out.Items, durable...)
	}
	if len(out.Items) < limit {
		rest, err := rankedTx(ctx, stmt, chain, sectionUnavailable, limit-len(out.Items))
		if err != nil {
			return BootstrapList{}, err
		}
		out.Items = append(out.Items, rest...)
	}
	if err := flagUnavailableTx(ctx, tx, out.Items); err != nil {
		return BootstrapList{}, err
	}
	if len(out.Items) < out.Total && !slices.ContainsFunc(out.Items, func(it BootstrapItem) bool {
		return it.Reason == ReasonAnchorUnavailable
	}) {
		next, err := nextUnavailableTx(ctx, tx, chain)
		if err != nil {
			return BootstrapList{}, err
		}
		out.Items = append(out.Items, next...)
	}
	return out, nil
}

// nextUnavailableTx returns the first item of chain's packet listed for an
// unavailable anchor (a durable record flagged in its section, else the
// first of the third section), flagged, or nothing when there is none.
func nextUnavailableTx(ctx context.Context, tx *txn, chain []string) ([]BootstrapItem, error) {
	stmt, err := tx.PrepareContext(ctx, bootstrapUnavailableSQL)
	if err != nil {
		return nil, classify("bootstrap", err)
	}
	defer stmt.Close()
	for _, section := range []int{sectionDurable, sectionUnavailable} {
		items, err := rankedTx(ctx, stmt, chain, section, 1)
		if err != nil {
			return nil, err
		}
		if len(items) > 0 {
			return items, flagUnavailableTx(ctx, tx, items)
		}
	}
	return nil, nil
}

// rankedTx returns the first limit items of a bootstrap_rank section across
// the chain, with stmt (Bootstrap's per-namespace query). Each namespace's
// best come straight off bootstrap_rank_order_idx; they are merged by the
// same key, then by the namespace's place in the chain.
func rankedTx(ctx context.Context, stmt *sql.Stmt, chain []string, section, limit int) ([]BootstrapItem, error) {
	type ranked struct {
		item       BootstrapItem
		typeRank   int
		confidence float64
		uses       int
		scope      int
	}
	reason := map[int]string{
		sectionCandidate:   ReasonCandidate,
		sectionDurable:     ReasonDurable,
		sectionUnavailable: ReasonAnchorUnavailable,
	}[section]
	// Candidates and the third section go namespace by namespace: once
	// limit items are in hand, a later namespace cannot come before them.
	byScope := section != sectionDurable
	var all []ranked
	for i, ns := range chain {
		if byScope && len(all) >= limit {
			break
		}
		rows, err := stmt.QueryContext(ctx, ns, section, limit)
		if err != nil {
			return nil, classify("bootstrap", err)
		}
		for rows.Next() {
			r := ranked{scope: i, item: BootstrapItem{Namespace: ns, Reason: reason}}
			if err := rows.Scan(&r.item.ID, &r.item.Type, &r.item.Title, &r.typeRank, &r.confidence, &r.uses); err != nil {
				rows.Close()
				return nil, classify("bootstrap", err)
			}
			all = append(all, r)
		}
		if err := rows.Close(); err != nil {
			return nil, classify("bootstrap", err)
		}
		if err := rows.Err(); err != nil {
			return nil, classify("bootstrap", err)
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		if byScope {
			return cmp.Compare(a.scope, b.scope) // each namespace's rows are already newest first
		}
		return cmp.Or(
			cmp.Compare(a.typeRank, b.typeRank),
			cmp.Compare(b.confidence, a.confidence),
			cmp.Compare(b.uses, a.uses),
			cmp.Compare(a.scope, b.scope),
			cmp.Compare(b.item.ID, a.item.ID),
		)
	})
	out := make([]BootstrapItem, 0, min(len(all), limit))
	for _, r := range all[:min(len(all), limit)] {
		out = append(out, r.item)
	}
	return out, nil
}

// flagUnavailableTx flags the items with an unavailable anchor (which
// anchor, since when, how many) and gives a durable one among them the
// reason ReasonAnchorUnavailable; candidates keep theirs.
func flagUnavailableTx(ctx context.Context, tx *txn, items []BootstrapItem) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT record_id, anchor, checked_at FROM anchors
		WHERE record_id IN (SELECT value FROM json_each(?1)) AND state = 'unavailable'
		ORDER BY record_id, position`, jsonList(ids))
	if err != nil {
		return classify("bootstrap", err)
	}
	defer rows.Close()
	flags := map[string]*AnchorFlag{}
	for rows.Next() {
		var (
			id, a string
			since sql.NullInt64
		)
		if err := rows.Scan(&id, &a, &since); err != nil {
			return classify("bootstrap", err)
		}
		if f := flags[id]; f != nil {
			f.Count++
		} else {
			flags[id] = &AnchorFlag{Anchor: a, Since: sqlval.Time(since), Count: 1}
		}
	}
	if err := rows.Err(); err != nil {
		return classify("bootstrap", err)
	}
	for i := range items {
		f := flags[items[i].ID]
		if f == nil {
			continue
		}
		items[i].Unavailable = *f
		if items[i].Reason == ReasonDurable {
			items[i].Reason = ReasonAnchorUnavailable
		}
	}
	return nil
}
