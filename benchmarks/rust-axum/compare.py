#!/usr/bin/env python3
"""The comparisons of compare-pages.sh, one request at a time (no load).

compare.py pages   SEED.sqlite3 GO_PORT RS_PORT DIFFDIR
compare.py actions TINY.sqlite3 GO_PORT RS_PORT DIFFDIR
compare.py writes  SEED.sqlite3 GO_PORT RS_PORT DIFFDIR N
compare.py check   GO.sqlite3 RS.sqlite3
"""
import http.client
import os
import re
import sqlite3
import sys

HEADERS = ("content-type", "location", "x-benchmark-action", "x-benchmark-wrote", "content-length", "allow", "retry-after")
AGE = re.compile(rb'">(just now|[0-9]+ (minute|hour|day|month|year)s? ago)</time>')
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SECONDS = re.compile(rb'(datetime="[0-9T:-]+:)[0-9]{2}Z"')


class Server:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def fetch(self, method, path, headers=None):
        for attempt in range(2):
            try:
                self.conn.request(method, path, headers=headers or {})
                r = self.conn.getresponse()
                body = r.read()
                hs = {k.lower(): v for k, v in r.getheaders()}
                return r.status, hs, body
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise


class Tally:
    def __init__(self, diffdir, label):
        self.diffdir, self.label = diffdir, label
        self.total = self.same = self.ages = self.uuids = 0
        self.diffs = []

    def compare(self, name, go, rs, modulo_uuid=False, headers=HEADERS):
        """Counts one page: identical bytes (status, the headers that matter,
        body), identical but for an age across a boundary, identical but for
        random UUIDs (where the two servers made their own), or different."""
        self.total += 1
        (gs, gh, gb), (rs_, rh, rb) = go, rs
        head_go = [gs] + [gh.get(h) for h in headers]
        head_rs = [rs_] + [rh.get(h) for h in headers]
        if modulo_uuid:
            head_go = [UUID.sub(b"UUID", h.encode()).decode() if isinstance(h, str) else h for h in head_go]
            head_rs = [UUID.sub(b"UUID", h.encode()).decode() if isinstance(h, str) else h for h in head_rs]
            gb, rb = UUID.sub(b"UUID", gb), UUID.sub(b"UUID", rb)
            # the UUIDs are as long as each other, so Content-Length holds
        if head_go == head_rs and gb == rb:
            if modulo_uuid:
                self.uuids += 1
            else:
                self.same += 1
            return True
        norm = lambda b: SECONDS.sub(rb"\1SS", AGE.sub(b'">AGE</time>', b))
        if head_go[:2] == head_rs[:2] and norm(gb) == norm(rb) and len(gb) != len(rb) or (
                head_go == head_rs and norm(gb) == norm(rb)):
            self.ages += 1
            return True
        self.diffs.append(name)
        if self.diffdir:
            os.makedirs(self.diffdir, exist_ok=True)
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            with open(os.path.join(self.diffdir, safe + ".go"), "wb") as f:
                f.write(repr(head_go).encode() + b"\n" + gb)
            with open(os.path.join(self.diffdir, safe + ".rs"), "wb") as f:
                f.write(repr(head_rs).encode() + b"\n" + rb)
        if len(self.diffs) <= 5:
            print(f"  DIFFERENT: {name}")
            for h, a, b in zip(["status", *headers], head_go, head_rs):
                if a != b:
                    print(f"    {h}: go={a!r} rs={b!r}")
            if gb != rb:
                i = next((i for i in range(min(len(gb), len(rb))) if gb[i] != rb[i]), min(len(gb), len(rb)))
                print(f"    body: {len(gb)} vs {len(rb)} bytes, first difference at byte {i}:")
                print(f"      go: {gb[max(0, i - 80):i + 80]!r}")
                print(f"      rs: {rb[max(0, i - 80):i + 80]!r}")
        return False

    def report(self):
        extra = []
        if self.ages:
            extra.append(f"{self.ages} identical but for an age or a clock second read across a boundary")
        if self.uuids:
            extra.append(f"{self.uuids} identical but for the random UUIDs each server wrote")
        extra.append(f"{len(self.diffs)} different")
        print(f"{self.label}: {self.same} of {self.total} pages byte-identical ({'; '.join(extra)})")
        if self.diffs:
            print("  first differences:", ", ".join(self.diffs[:10]))
        return not self.diffs


def pages(db, go_port, rs_port, diffdir):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ids = [r[0] for r in con.execute("SELECT id FROM posts ORDER BY id")]
    top = con.execute("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'posts'").fetchone()[0]
    con.close()
    go, rs = Server(go_port), Server(rs_port)
    t = Tally(diffdir, "GET /posts/ID for every post, GET /, and the fixed answers")
    both = lambda *a, **k: (go.fetch(*a, **k), rs.fetch(*a, **k))
    for i in ids:
        t.compare(f"GET /posts/{i}", *both("GET", f"/posts/{i}"))
    t.compare("GET /", *both("GET", "/"))
    for before in (ids[len(ids) // 2], ids[50] if len(ids) > 50 else ids[-1], ids[0]):
        t.compare(f"GET /?before={before}", *both("GET", f"/?before={before}"))
    fixed = [
        ("POST", "/benchmarking/ceiling", {}),
        ("GET", "/benchmarking/post_show", {}),
        ("PUT", "/benchmarking/balanced", {}),
        ("POST", "/benchmarking/nope", {}),
        ("POST", "/benchmarking/post_show", {"Sec-Fetch-Site": "cross-site"}),
        ("GET", f"/posts/{top + 1000}", {}),
        ("GET", "/posts/0", {}),
        ("GET", "/posts/abc", {}),
        ("GET", "/posts/007", {}),
        ("GET", "/?before=abc", {}),
    ]
    for m, p, h in fixed:
        t.compare(f"{m} {p}{' ' + str(h) if h else ''}", *both(m, p, h))
    ok = t.report()
    # The answers that depend on chance, checked for their form: a
    # post_show of loremnews-rs is the page of the post it picked, which the
    # Go app's GET /posts/ID must match.
    t2 = Tally(diffdir, "loremnews-rs POST /benchmarking/post_show vs the Go app's GET /posts/ID of the post it picked")
    for n in range(100):
        r = rs.fetch("POST", "/benchmarking/post_show")
        m = re.search(rb'return_to=/posts/([0-9]+)"', r[2])
        if not m:
            t2.compare(f"post_show #{n}", ((0, {}, b"no post id")), r)
            continue
        g = go.fetch("GET", f"/posts/{m.group(1).decode()}")
        t2.compare(f"post_show #{n} (post {m.group(1).decode()})", g, r, headers=("content-type", "content-length"))
    ok = t2.report() and ok
    # And the other way: the Go app's post_show against loremnews-rs's
    # GET /posts/ID.
    t3 = Tally(diffdir, "the Go app's POST /benchmarking/post_show vs loremnews-rs GET /posts/ID of the post it picked")
    for n in range(100):
        g = go.fetch("POST", "/benchmarking/post_show")
        m = re.search(rb'return_to=/posts/([0-9]+)"', g[2])
        if not m:
            t3.compare(f"post_show #{n}", g, ((0, {}, b"no post id")))
            continue
        r = rs.fetch("GET", f"/posts/{m.group(1).decode()}")
        t3.compare(f"post_show #{n} (post {m.group(1).decode()})", g, r, headers=("content-type", "content-length"))
    ok = t3.report() and ok
    # A user_show of loremnews-rs is the page of the user it touched, which
    # the Go app's GET /users/ID (the same renderUserPage) must match but
    # for the "last seen" the touch just set in loremnews-rs's file only.
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    user_ids = {name.encode(): i for i, name in con.execute("SELECT id, screen_name FROM users")}
    con.close()
    seen = re.compile(rb' \xc2\xb7 last seen <time [^>]*>[^<]*</time>')
    t4 = Tally(diffdir, "loremnews-rs POST /benchmarking/user_show vs the Go app's GET /users/ID, \"last seen\" left out")
    for n in range(100):
        r = rs.fetch("POST", "/benchmarking/user_show")
        m = re.search(rb"<h1>([^<]*)</h1>", r[2])
        uid = user_ids.get(m.group(1)) if m else None
        if uid is None:
            t4.compare(f"user_show #{n}", ((0, {}, b"no user")), r)
            continue
        g = go.fetch("GET", f"/users/{uid}")
        strip = lambda x: (x[0], x[1], seen.sub(b"", x[2]))
        t4.compare(f"user_show #{n} (user {uid})", strip(g), strip(r), headers=("content-type",))
    ok = t4.report() and ok
    return ok


def actions(db, go_port, rs_port, diffdir):
    go, rs = Server(go_port), Server(rs_port)
    both = lambda *a, **k: (go.fetch(*a, **k), rs.fetch(*a, **k))
    t = Tally(diffdir, "benchmarking actions on one user and one post (every pick has one choice)")
    # Reads: all deterministic here (the touch picks the only user).
    for a in ("post_show", "posts_index", "user_show", "point_read", "read_heavy"):
        if a == "read_heavy":
            continue
        t.compare(f"POST /benchmarking/{a}", *both("POST", f"/benchmarking/{a}"))
    # A comment on the only post: same ids, same redirect; the page it
    # leads to shows the comment, whose text holds a random UUID.
    g, r = both("POST", "/benchmarking/comment_create")
    t.compare("POST /benchmarking/comment_create", g, r)
    t.compare("GET /posts/1 after comment_create", *both("GET", "/posts/1"), modulo_uuid=True)
    t.compare("POST /benchmarking/post_show after comment_create", *both("POST", "/benchmarking/post_show"), modulo_uuid=True)
    t.compare("POST /benchmarking/user_show after comment_create", *both("POST", "/benchmarking/user_show"), modulo_uuid=True)
    # comment_destroy picks one of the post's comments at random: the
    # redirect and the post must agree, the comment id may not.
    g, r = both("POST", "/benchmarking/comment_destroy")
    t.compare("POST /benchmarking/comment_destroy (status, Location, post)", g, r,
              headers=("content-type", "location", "x-benchmark-action", "content-length"))
    # The only post goes: the front page is empty, its page is gone.
    t.compare("POST /benchmarking/post_destroy", *both("POST", "/benchmarking/post_destroy"))
    t.compare("GET / after post_destroy", *both("GET", "/"))
    t.compare("GET /posts/1 after post_destroy (gone)", *both("GET", "/posts/1"))
    for a in ("post_show", "comment_create", "comment_destroy", "posts_index", "post_destroy", "user_show", "point_read"):
        t.compare(f"POST /benchmarking/{a} with no post", *both("POST", f"/benchmarking/{a}"))
    # A new post: its title holds a UUID, its description the published
    # request headers.
    hdrs = {"User-Agent": "compare-pages/1", "Accept": "text/html", "Accept-Language": "en-GB, fr;q=0.5",
            "X-Secret": "not published", "Content-Type": "application/x-www-form-urlencoded"}
    g, r = both("POST", "/benchmarking/post_create", hdrs)
    t.compare("POST /benchmarking/post_create", g, r)
    loc = g[1].get("location", "/posts/0")
    t.compare(f"GET {loc} after post_create", *both("GET", loc), modulo_uuid=True)
    for a in ("post_show", "posts_index", "user_show"):
        t.compare(f"POST /benchmarking/{a} after post_create", *both("POST", f"/benchmarking/{a}"), modulo_uuid=True)
    t.compare("GET / after post_create", *both("GET", "/"), modulo_uuid=True)
    return t.report()


def writes(db, go_port, rs_port, diffdir, n):
    go, rs = Server(go_port), Server(rs_port)
    acts = ["post_create", "comment_create", "comment_destroy", "post_destroy"]
    mixes = ["read_heavy", "write_heavy", "balanced"]
    counts = {}
    for name, s in (("go", go), ("rs", rs)):
        for a in acts + mixes:
            k = n if a in acts else max(1, n // 3)
            for _ in range(k):
                st, h, _ = s.fetch("POST", f"/benchmarking/{a}")
                key = (name, a, st, h.get("x-benchmark-action"))
                counts[key] = counts.get(key, 0) + 1
    print(f"writes: {n} of each write action and {max(1, n // 3)} of each mix, one at a time, to each server:")
    for a in acts + mixes:
        for name in ("go", "rs"):
            got = sorted((f"{st} {act}", c) for (nm, aa, st, act), c in counts.items() if nm == name and aa == a)
            print(f"  {name} {a}: " + ", ".join(f"{c}× {k}" for k, c in got))
    return True


def check(go_db, rs_db):
    ok = True
    for name, path in (("go", go_db), ("rs", rs_db)):
        con = sqlite3.connect(path)
        integrity = [r[0] for r in con.execute("PRAGMA integrity_check")]
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
        q = lambda s: con.execute(s).fetchone()[0]
        users, posts, comments = q("SELECT count(*) FROM users"), q("SELECT count(*) FROM posts"), q("SELECT count(*) FROM comments")
        bad_comments = q("SELECT count(*) FROM posts p WHERE p.comments_count <> (SELECT count(*) FROM comments c WHERE c.post_id = p.id)")
        bad_posts = q("SELECT count(*) FROM users u WHERE u.posts_count <> (SELECT count(*) FROM posts p WHERE p.user_id = u.id)")
        sum_cc = q("SELECT coalesce(sum(comments_count), 0) FROM posts")
        sum_pc = q("SELECT coalesce(sum(posts_count), 0) FROM users")
        seen = q("SELECT count(*) FROM users WHERE last_seen_at IS NOT NULL")
        keys = q("SELECT count(*) FROM posts WHERE title_key <> lower(title)")
        print(f"{name}: integrity_check={','.join(integrity)} foreign_key_check={len(fk)} rows; "
              f"{users} users, {posts} posts, {comments} comments; "
              f"posts.comments_count: sum {sum_cc}, {bad_comments} posts differ from count(*) of their comments; "
              f"users.posts_count: sum {sum_pc}, {bad_posts} users differ from count(*) of their posts; "
              f"{seen} users with last_seen_at; {keys} posts whose title_key is not lower(title)")
        ok = ok and integrity == ["ok"] and not fk and bad_comments == 0 and bad_posts == 0 and sum_cc == comments and sum_pc == posts
        con.close()
    print("database check:", "OK" if ok else "FAILED")
    return ok


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "pages":
        ok = pages(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif mode == "actions":
        ok = actions(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif mode == "writes":
        ok = writes(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
    else:
        ok = check(sys.argv[2], sys.argv[3])
    sys.exit(0 if ok else 1)
