package sqlite

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/loremnews/loremnews"
)

// names keeps users' screen names and posts' titles by id, for the pages
// that show them beside rows of other tables: the front page's authors,
// a post page's commenters, a user page's titles of the posts commented
// on. Without it each such row would fetch a page of users or posts of its
// own: a read connection's page cache is emptied whenever another
// connection has committed (nearly every request here), and with 100
// times the data those rows are spread over as many pages as there are
// rows.
//
// What it holds is right as of a version: the highest seq of name_changes
// (migration 0009), whose triggers log every id whose name or title may
// have changed, whoever wrote it, with that change's ids (nameVersion). A
// reader reads the version in its own snapshot first; if the cache is
// behind, it reads the ids logged since and forgets them (or everything,
// when the log no longer reaches back that far, or its entry at the
// cache's version is another change: the file was replaced meanwhile). A
// version lower than the cache's, or the cache's seq with another change,
// forgets everything: an older copy of the file was restored in place (a
// reader whose snapshot merely began before the cache's latest also lands
// there, and costs only refills: the log moves when a name changes or a
// row is deleted, not on every write). A write transaction, whose changes
// may still roll back, reads from the tables and leaves the cache alone.
type names struct {
	mu      sync.RWMutex
	version nameVersion
	users   map[int64]string
	titles  map[int64]string
}

// maxNames bounds each of names' maps: past it, a map is emptied before
// more are added. 100 times the seed's data is 10,000 users and 100,000
// posts.
const maxNames = 1 << 18

func newNames() *names {
	return &names{users: map[int64]string{}, titles: map[int64]string{}}
}

// nameVersion is a version of the names: the highest seq name_changes has
// issued, and the ids that change logged (0 where none, or where the log
// no longer holds it), which tell a file restored in place, whose log
// issued the same seq for another change, from the one the cache read.
type nameVersion struct{ seq, user, post int64 }

// nameVersionSQL reads the nameVersion of a snapshot: the log's
// AUTOINCREMENT counter (which the trimming of the log leaves alone) and
// its entry, if it still holds it.
const nameVersionSQL = `SELECT v.seq, coalesce(c.user_id, 0), coalesce(c.post_id, 0)
FROM (SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'name_changes'), 0) AS seq) AS v
LEFT JOIN name_changes AS c ON c.seq = v.seq`

// fill sets the ScreenName of each of users and the Title of each of posts
// from their ids, as of q's snapshot. n may be nil (in a write
// transaction): then every name is read from the tables.
func (n *names) fill(ctx context.Context, q Querier, users []*loremnews.User, posts []*loremnews.Post) error {
	if len(users) == 0 && len(posts) == 0 {
		return nil
	}
	// want[0] are the users' names, want[1] the posts' titles: each a
	// row's id and where its name goes, read by nameQueries[i] and kept in
	// the cache's map i.
	want := [2][]named{make([]named, 0, len(users)), make([]named, 0, len(posts))}
	for _, u := range users {
		want[0] = append(want[0], named{u.ID, &u.ScreenName})
	}
	for _, p := range posts {
		want[1] = append(want[1], named{p.ID, &p.Title})
	}
	usable, version := false, nameVersion{}
	if n != nil {
		var err error
		if usable, version, err = n.catchUp(ctx, q); err != nil {
			return err
		}
	}
	missing := want
	if usable {
		n.mu.RLock()
		if usable = n.version == version; usable {
			for i, m := range n.maps() {
				missing[i] = fromCache(*m, want[i])
			}
		}
		n.mu.RUnlock()
	}
	var found [2]map[int64]string
	for i := range want {
		if len(missing[i]) == 0 {
			continue
		}
		var err error
		if found[i], err = readNames(ctx, q, nameQueries[i], missing[i]); err != nil {
			return err
		}
		for _, w := range missing[i] {
			if name, ok := found[i][w.id]; ok {
				*w.out = name
			}
		}
	}
	if usable && (len(found[0]) > 0 || len(found[1]) > 0) {
		n.mu.Lock()
		if n.version == version {
			for i, m := range n.maps() {
				*m = keep(*m, found[i])
			}
		}
		n.mu.Unlock()
	}
	return nil
}

// named is a row whose name or title fill sets: its id, and where it goes.
type named struct {
	id  int64
	out *string
}

// nameQueries read the (id, name) pairs of users and (id, title) of posts
// for ids given as one JSON array: fill's want[0] and want[1].
var nameQueries = [2]string{
	`SELECT id, screen_name FROM users WHERE id IN (SELECT value FROM json_each(?))`,
	`SELECT id, title FROM posts WHERE id IN (SELECT value FROM json_each(?))`,
}

// maps are the cache's maps in fill's order: names, then titles.
func (n *names) maps() [2]*map[int64]string { return [2]*map[int64]string{&n.users, &n.titles} }

// fromCache sets each of want that m holds and returns the rest.
func fromCache(m map[int64]string, want []named) (missing []named) {
	for _, w := range want {
		if name, ok := m[w.id]; ok {
			*w.out = name
		} else {
			missing = append(missing, w)
		}
	}
	return missing
}

// keep adds found to m, emptying m first if it would pass maxNames.
func keep(m, found map[int64]string) map[int64]string {
	if len(m)+len(found) > maxNames {
		m = make(map[int64]string, len(found))
	}
	for id, s := range found {
		m[id] = s
	}
	return m
}

// catchUp reads the version of q's snapshot and brings the cache up to it
// if it is behind. It says whether the cache then holds that version.
func (n *names) catchUp(ctx context.Context, q Querier) (usable bool, version nameVersion, err error) {
	if err := q.QueryRow(ctx, nameVersionSQL).Scan(&version.seq, &version.user, &version.post); err != nil {
		return false, version, err
	}
	n.mu.RLock()
	have, empty := n.version, len(n.users) == 0 && len(n.titles) == 0
	n.mu.RUnlock()
	if have == version {
		return true, version, nil
	}
	var users, posts []int64
	complete := empty
	if !empty && version.seq > have.seq {
		// The entries from the cache's own on: the first must be the
		// change the cache's version names, else the log was rewritten.
		rows, err := q.Query(ctx, `SELECT seq, coalesce(user_id, 0), coalesce(post_id, 0) FROM name_changes WHERE seq >= ? ORDER BY seq`, have.seq)
		if err != nil {
			return false, version, err
		}
		defer rows.Close()
		next, checked := have.seq+1, have.seq == 0 // seq 0 names no change
		for rows.Next() {
			var c nameVersion
			if err := rows.Scan(&c.seq, &c.user, &c.post); err != nil {
				return false, version, err
			}
			if c.seq == have.seq {
				checked = c == have
				continue
			}
			if c.seq != next { // trimmed (or taken out by hand)
				checked = false
			}
			next = c.seq + 1
			if c.user != 0 {
				users = append(users, c.user)
			}
			if c.post != 0 {
				posts = append(posts, c.post)
			}
		}
		if err := rows.Err(); err != nil {
			return false, version, err
		}
		complete = checked && next == version.seq+1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.version == version:
		return true, version, nil
	case n.version != have: // another reader moved it meanwhile
		return false, version, nil
	}
	if !complete { // behind the log's reach, rewritten, or gone back
		n.users, n.titles = map[int64]string{}, map[int64]string{}
	}
	for _, id := range users {
		delete(n.users, id)
	}
	for _, id := range posts {
		delete(n.titles, id)
	}
	n.version = version
	return true, version, nil
}

// readNames reads the (id, name) pairs of want by a query that takes their
// ids as one JSON array.
func readNames(ctx context.Context, q Querier, query string, want []named) (map[int64]string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range want {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r.id, 10))
	}
	b.WriteByte(']')
	rows, err := q.Query(ctx, query, b.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[int64]string, len(want))
	for rows.Next() {
		var (
			id   int64
			name string
		)
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		found[id] = name
	}
	return found, rows.Err()
}
