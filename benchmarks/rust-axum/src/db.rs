//! The store: one writer thread owning the write connection, a pool of
//! read threads each owning a read connection, the names cache, and the
//! benchmarking actions, statement for statement as the Go app's
//! sqlite/benchmark.go, posts.go, comments.go, users.go and names.go.

use crate::text::{now_nanos, title_key};
use rand::Rng;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::{HashMap, VecDeque};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
use tokio::sync::oneshot;

/// A domain error, as loremnews.Error's codes.
#[derive(Debug, Clone)]
pub enum AppError {
    NotFound(String),
    Gone(String),
    Invalid(String),
    Unavailable(String),
    Internal(String),
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> Self {
        if let rusqlite::Error::SqliteFailure(f, _) = &e {
            match f.code {
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => {
                    return AppError::Unavailable("The database is busy. Please try again.".into())
                }
                rusqlite::ErrorCode::DiskFull => {
                    return AppError::Unavailable(
                        "The database is full (out of disk space); nothing was saved. Please try again later.".into(),
                    )
                }
                _ => {}
            }
        }
        AppError::Internal(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, AppError>;

#[derive(Debug, Default, Clone)]
pub struct Post {
    pub id: i64,
    pub user_id: i64,
    pub title: String,
    pub description: String,
    pub comments_count: i64,
    pub created_at: i64,
    pub author_name: String,
}

#[derive(Debug, Default, Clone)]
pub struct Comment {
    pub id: i64,
    pub post_id: i64,
    pub user_id: i64,
    pub body: String,
    pub created_at: i64,
    pub author_name: String,
    pub post_title: String,
}

#[derive(Debug, Default, Clone)]
pub struct User {
    pub id: i64,
    pub screen_name: String,
    pub about: String,
    pub last_seen_at: Option<i64>,
    pub posts_count: i64,
    pub created_at: i64,
    pub comments_count: i64,
}

// ---------------------------------------------------------------- SQL

// postsListingSQL + frontPageTail, and postsListingSQL + fromIDTail.
pub const FRONT_PAGE_SQL: &str = "SELECT p.id, p.user_id, p.title, p.comments_count, p.created_at FROM posts p WHERE p.id < ? ORDER BY p.id DESC LIMIT ?";
pub const FROM_ID_SQL: &str = "SELECT p.id, p.user_id, p.title, p.comments_count, p.created_at FROM posts p WHERE p.id >= ? ORDER BY p.id LIMIT ?";
const FIND_POST_SQL: &str = "SELECT p.id, p.user_id, p.title, p.description, p.published_at, p.comments_count, p.created_at, p.updated_at FROM posts p WHERE p.id = ?";
const FIND_USER_SQL: &str = "SELECT u.id, u.screen_name, u.password_digest, u.about, u.last_seen_at, u.posts_count, u.created_at, u.updated_at FROM users u WHERE u.id = ?";
const USER_POSTS_SQL: &str = "SELECT p.id, p.user_id, p.title, p.comments_count, p.created_at FROM posts p\n\t\tWHERE p.user_id = ? AND p.id < ? ORDER BY p.id DESC LIMIT ?";
const USER_COMMENTS_SQL: &str = "SELECT c.id, c.post_id, c.body, c.created_at\n\t\tFROM comments c\n\t\tWHERE c.user_id = ? AND c.id < ? ORDER BY c.id DESC LIMIT ?";
const USER_COMMENT_COUNT_SQL: &str = "SELECT count(*) FROM comments WHERE user_id = ?";
const POST_COMMENTS_SQL: &str = "SELECT c.id, c.user_id, c.body, c.created_at\n\t\tFROM comments c\n\t\tWHERE c.post_id = ? AND c.id < ? ORDER BY c.id DESC LIMIT ?";
const NAME_VERSION_SQL: &str = "SELECT v.seq, coalesce(c.user_id, 0), coalesce(c.post_id, 0)\nFROM (SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'name_changes'), 0) AS seq) AS v\nLEFT JOIN name_changes AS c ON c.seq = v.seq";
const NAME_QUERIES: [&str; 2] = [
    "SELECT id, screen_name FROM users WHERE id IN (SELECT value FROM json_each(?))",
    "SELECT id, title FROM posts WHERE id IN (SELECT value FROM json_each(?))",
];
const POINT_READ_SQL: &str = "SELECT coalesce(\n\t\t\t(SELECT screen_name FROM users WHERE id >= (SELECT min(id) FROM users) + ?1 % ((SELECT max(id) FROM users) - (SELECT min(id) FROM users) + 1)\n\t\t\t\tORDER BY id LIMIT 1),\n\t\t\t(SELECT screen_name FROM users ORDER BY id LIMIT 1))";

struct PickSql {
    bounds: &'static str,
    at_or_after: &'static str,
    first: &'static str,
}

fn pick_sql(table: &str) -> PickSql {
    match table {
        "users" => PickSql {
            bounds: "SELECT (SELECT min(id) FROM users), (SELECT max(id) FROM users)",
            at_or_after: "SELECT id FROM users WHERE id >= ? ORDER BY id LIMIT 1",
            first: "SELECT id FROM users ORDER BY id LIMIT 1",
        },
        "posts" => PickSql {
            bounds: "SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)",
            at_or_after: "SELECT id FROM posts WHERE id >= ? ORDER BY id LIMIT 1",
            first: "SELECT id FROM posts ORDER BY id LIMIT 1",
        },
        _ => PickSql {
            bounds: "SELECT (SELECT min(id) FROM comments), (SELECT max(id) FROM comments)",
            at_or_after: "SELECT id FROM comments WHERE id >= ? ORDER BY id LIMIT 1",
            first: "SELECT id FROM comments ORDER BY id LIMIT 1",
        },
    }
}

/// pickRandomID: a random id between the smallest and largest, then the
/// first row at or after it, wrapping to the first row.
fn pick_random_id(c: &Connection, table: &str) -> Result<i64> {
    let pick = pick_sql(table);
    let (lo, hi): (Option<i64>, Option<i64>) =
        c.prepare_cached(pick.bounds)?.query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (lo, hi) = match (lo, hi) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => return Err(AppError::NotFound(format!("There are no {} to pick from.", table))),
    };
    let target = lo + rand::rng().random_range(0..(hi - lo + 1));
    let id: Option<i64> = c.prepare_cached(pick.at_or_after)?.query_row([target], |r| r.get(0)).optional()?;
    if let Some(id) = id {
        return Ok(id);
    }
    let id: Option<i64> = c.prepare_cached(pick.first)?.query_row([], |r| r.get(0)).optional()?;
    id.ok_or_else(|| AppError::NotFound(format!("There are no {} to pick from.", table)))
}

/// touchRandomUser: pick a user, set its last_seen_at to now.
fn touch_random_user(c: &Connection) -> Result<i64> {
    let id = pick_random_id(c, "users")?;
    c.prepare_cached("UPDATE users SET last_seen_at = ? WHERE id = ?")?.execute(params![now_nanos(), id])?;
    Ok(id)
}

fn is_constraint(e: &rusqlite::Error, ext: i32) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.extended_code == ext)
}

// ---------------------------------------------------------------- names cache

const MAX_NAMES: usize = 1 << 18;

#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
struct NameVersion {
    seq: i64,
    user: i64,
    post: i64,
}

#[derive(Default)]
struct NamesInner {
    version: NameVersion,
    maps: [HashMap<i64, String>; 2], // users' screen names, posts' titles
}

/// names.go's cache of screen names and titles by id.
#[derive(Default)]
pub struct Names {
    inner: RwLock<NamesInner>,
}

impl Names {
    /// fill: the names of want[0] (user ids) and want[1] (post ids) as of
    /// the snapshot of c, by id (ids not found are absent).
    fn fill(&self, c: &Connection, want: [&[i64]; 2]) -> Result<[HashMap<i64, String>; 2]> {
        let mut out: [HashMap<i64, String>; 2] = Default::default();
        if want[0].is_empty() && want[1].is_empty() {
            return Ok(out);
        }
        let (mut usable, version) = self.catch_up(c)?;
        let mut missing: [Vec<i64>; 2] = [want[0].to_vec(), want[1].to_vec()];
        if usable {
            let g = self.inner.read().unwrap();
            usable = g.version == version;
            if usable {
                for i in 0..2 {
                    let mut rest = Vec::new();
                    for &id in want[i] {
                        if let Some(name) = g.maps[i].get(&id) {
                            out[i].insert(id, name.clone());
                        } else {
                            rest.push(id);
                        }
                    }
                    missing[i] = rest;
                }
            }
        }
        let mut found: [HashMap<i64, String>; 2] = Default::default();
        for i in 0..2 {
            if missing[i].is_empty() {
                continue;
            }
            found[i] = read_names(c, NAME_QUERIES[i], &missing[i])?;
            for (id, name) in &found[i] {
                out[i].insert(*id, name.clone());
            }
        }
        if usable && (!found[0].is_empty() || !found[1].is_empty()) {
            let mut g = self.inner.write().unwrap();
            if g.version == version {
                for (i, f) in found.into_iter().enumerate() {
                    if g.maps[i].len() + f.len() > MAX_NAMES {
                        g.maps[i] = HashMap::with_capacity(f.len());
                    }
                    g.maps[i].extend(f);
                }
            }
        }
        Ok(out)
    }

    /// catchUp: reads the snapshot's version and brings the cache up to it.
    fn catch_up(&self, c: &Connection) -> Result<(bool, NameVersion)> {
        let version = c.prepare_cached(NAME_VERSION_SQL)?.query_row([], |r| {
            Ok(NameVersion { seq: r.get(0)?, user: r.get(1)?, post: r.get(2)? })
        })?;
        let (have, empty) = {
            let g = self.inner.read().unwrap();
            (g.version, g.maps[0].is_empty() && g.maps[1].is_empty())
        };
        if have == version {
            return Ok((true, version));
        }
        let mut users = Vec::new();
        let mut posts = Vec::new();
        let mut complete = empty;
        if !empty && version.seq > have.seq {
            let mut stmt = c.prepare_cached(
                "SELECT seq, coalesce(user_id, 0), coalesce(post_id, 0) FROM name_changes WHERE seq >= ? ORDER BY seq",
            )?;
            let mut rows = stmt.query([have.seq])?;
            let mut next = have.seq + 1;
            let mut checked = have.seq == 0;
            while let Some(r) = rows.next()? {
                let ch = NameVersion { seq: r.get(0)?, user: r.get(1)?, post: r.get(2)? };
                if ch.seq == have.seq {
                    checked = ch == have;
                    continue;
                }
                if ch.seq != next {
                    checked = false;
                }
                next = ch.seq + 1;
                if ch.user != 0 {
                    users.push(ch.user);
                }
                if ch.post != 0 {
                    posts.push(ch.post);
                }
            }
            complete = checked && next == version.seq + 1;
        }
        let mut g = self.inner.write().unwrap();
        if g.version == version {
            return Ok((true, version));
        }
        if g.version != have {
            return Ok((false, version));
        }
        if !complete {
            g.maps = Default::default();
        }
        for id in users {
            g.maps[0].remove(&id);
        }
        for id in posts {
            g.maps[1].remove(&id);
        }
        g.version = version;
        Ok((true, version))
    }
}

/// readNames: (id, name) pairs for ids given as one JSON array.
fn read_names(c: &Connection, query: &str, ids: &[i64]) -> Result<HashMap<i64, String>> {
    let mut arr = String::with_capacity(ids.len() * 6 + 2);
    arr.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            arr.push(',');
        }
        arr.push_str(&id.to_string());
    }
    arr.push(']');
    let mut stmt = c.prepare_cached(query)?;
    let mut rows = stmt.query([arr])?;
    let mut found = HashMap::with_capacity(ids.len());
    while let Some(r) = rows.next()? {
        found.insert(r.get::<_, i64>(0)?, r.get::<_, String>(1)?);
    }
    Ok(found)
}

// ---------------------------------------------------------------- reads

/// queryPosts: post summaries with their authors' names.
pub fn query_posts(c: &Connection, names: &Names, sql: &str, id: i64, limit: i64) -> Result<Vec<Post>> {
    let mut posts = Vec::with_capacity(limit.clamp(0, 500) as usize);
    {
        let mut stmt = c.prepare_cached(sql)?;
        let mut rows = stmt.query(params![id, limit])?;
        while let Some(r) = rows.next()? {
            posts.push(Post {
                id: r.get(0)?,
                user_id: r.get(1)?,
                title: r.get(2)?,
                comments_count: r.get(3)?,
                created_at: r.get(4)?,
                ..Default::default()
            });
        }
    }
    if posts.is_empty() {
        return Ok(posts);
    }
    let authors: Vec<i64> = posts.iter().map(|p| p.user_id).collect();
    let [users, _] = names.fill(c, [&authors, &[]])?;
    for p in &mut posts {
        if let Some(n) = users.get(&p.user_id) {
            p.author_name = n.clone();
        }
    }
    Ok(posts)
}

/// readPost: the post, its author's id only.
fn read_post(c: &Connection, id: i64) -> Result<Post> {
    let p = c
        .prepare_cached(FIND_POST_SQL)?
        .query_row([id], |r| {
            let _published: Option<i64> = r.get(4)?;
            let _updated: i64 = r.get(7)?;
            Ok(Post {
                id: r.get(0)?,
                user_id: r.get(1)?,
                title: r.get(2)?,
                description: r.get(3)?,
                comments_count: r.get(5)?,
                created_at: r.get(6)?,
                author_name: String::new(),
            })
        })
        .optional()?;
    p.ok_or_else(|| AppError::NotFound("Post not found.".into()))
}

/// wasDeleted: EGONE for an id no larger than the table's highest issued.
fn was_deleted(c: &Connection, table: &str, id: i64, not_found: AppError) -> AppError {
    let seq: std::result::Result<Option<Option<i64>>, _> = c
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = ?")
        .and_then(|mut s| s.query_row([table], |r| r.get(0)).optional());
    match seq {
        Err(e) => e.into(),
        Ok(Some(Some(seq))) if id <= seq => AppError::Gone("This has been deleted.".into()),
        Ok(_) => not_found,
    }
}

/// postPage: a post, its author, its newest 20 comments with theirs.
pub fn post_page(c: &Connection, names: &Names, id: i64) -> Result<(Post, Vec<Comment>)> {
    let mut p = match read_post(c, id) {
        Ok(p) => p,
        Err(e @ AppError::NotFound(_)) => return Err(was_deleted(c, "posts", id, e)),
        Err(e) => return Err(e),
    };
    let mut comments = Vec::with_capacity(20);
    {
        let mut stmt = c.prepare_cached(POST_COMMENTS_SQL)?;
        let mut rows = stmt.query(params![p.id, i64::MAX, 20i64])?;
        while let Some(r) = rows.next()? {
            comments.push(Comment {
                id: r.get(0)?,
                post_id: p.id,
                user_id: r.get(1)?,
                body: r.get(2)?,
                created_at: r.get(3)?,
                ..Default::default()
            });
        }
    }
    let mut authors = Vec::with_capacity(comments.len() + 1);
    authors.push(p.user_id);
    authors.extend(comments.iter().map(|c| c.user_id));
    let [users, _] = names.fill(c, [&authors, &[]])?;
    if let Some(n) = users.get(&p.user_id) {
        p.author_name = n.clone();
    }
    for cm in &mut comments {
        if let Some(n) = users.get(&cm.user_id) {
            cm.author_name = n.clone();
        }
    }
    Ok((p, comments))
}

/// userPage: a user, their newest posts and comments, their comment count.
pub fn user_page(c: &Connection, names: &Names, id: i64, limit: i64) -> Result<(User, Vec<Post>, Vec<Comment>)> {
    let u = c
        .prepare_cached(FIND_USER_SQL)?
        .query_row([id], |r| {
            let _digest: String = r.get(2)?;
            let _updated: i64 = r.get(7)?;
            Ok(User {
                id: r.get(0)?,
                screen_name: r.get(1)?,
                about: r.get(3)?,
                last_seen_at: r.get(4)?,
                posts_count: r.get(5)?,
                created_at: r.get(6)?,
                comments_count: 0,
            })
        })
        .optional()?;
    let mut u = u.ok_or_else(|| AppError::NotFound("User not found.".into()))?;
    let mut posts = Vec::new();
    {
        let mut stmt = c.prepare_cached(USER_POSTS_SQL)?;
        let mut rows = stmt.query(params![u.id, i64::MAX, limit])?;
        while let Some(r) = rows.next()? {
            posts.push(Post {
                id: r.get(0)?,
                user_id: r.get(1)?,
                title: r.get(2)?,
                comments_count: r.get(3)?,
                created_at: r.get(4)?,
                author_name: u.screen_name.clone(),
                ..Default::default()
            });
        }
    }
    let mut comments = Vec::new();
    {
        let mut stmt = c.prepare_cached(USER_COMMENTS_SQL)?;
        let mut rows = stmt.query(params![u.id, i64::MAX, limit])?;
        while let Some(r) = rows.next()? {
            comments.push(Comment {
                id: r.get(0)?,
                post_id: r.get(1)?,
                user_id: u.id,
                body: r.get(2)?,
                created_at: r.get(3)?,
                author_name: u.screen_name.clone(),
                post_title: String::new(),
            });
        }
    }
    if !comments.is_empty() {
        let post_ids: Vec<i64> = comments.iter().map(|c| c.post_id).collect();
        let [_, titles] = names.fill(c, [&[], &post_ids])?;
        for cm in &mut comments {
            if let Some(t) = titles.get(&cm.post_id) {
                cm.post_title = t.clone();
            }
        }
    }
    u.comments_count = c.prepare_cached(USER_COMMENT_COUNT_SQL)?.query_row([id], |r| r.get(0))?;
    Ok((u, posts, comments))
}

// ---------------------------------------------------------------- connections

/// The write connection's busy timeout: SQLite's busy handler waits for the
/// lock where the Go app's writer polls for it itself (busy timeout 0).
const WRITE_BUSY_TIMEOUT_MS: u64 = 5000;

fn open_conn(path: &str, read: bool) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let c = Connection::open_with_flags(path, flags)?;
    // The Go app's write connection has a busy timeout of 0 (its writer
    // polls for the lock itself); its read connections wait up to 5 s.
    c.busy_timeout(std::time::Duration::from_millis(if read { 5000 } else { WRITE_BUSY_TIMEOUT_MS }))?;
    // sqlitedb.DefaultPragmas, in order; query_only on the read pool.
    let mode: String = c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if mode != "wal" {
        return Err(rusqlite::Error::InvalidQuery);
    }
    c.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 268435456; \
         PRAGMA mmap_size = 0; PRAGMA cache_size = -20000; PRAGMA temp_store = MEMORY;",
    )?;
    if read {
        c.execute_batch("PRAGMA query_only = ON;")?;
    }
    c.set_prepared_statement_cache_capacity(128);
    Ok(c)
}

type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// A write on the writer's queue: run runs its statements (again, if the
/// transaction it ran in was rolled back for another write's sake) and
/// says whether they succeeded; finish answers its caller once its
/// transaction has ended.
struct WriteJob {
    run: Box<dyn FnMut(&Connection) -> bool + Send>,
    finish: Box<dyn FnOnce(Result<()>) + Send>,
}

#[derive(Default)]
struct WriteQueues {
    own: VecDeque<WriteJob>,       // one transaction each
    coalesced: VecDeque<WriteJob>, // touches: those waiting share one
}

const MAX_COALESCED: usize = 256;

pub struct Db {
    read_tx: mpsc::Sender<ReadJob>,
    writes: Arc<(Mutex<WriteQueues>, Condvar)>,
    pub names: Arc<Names>,
    pub read_conns: usize,
}

impl Db {
    pub fn open(path: &str, read_conns: usize) -> rusqlite::Result<Db> {
        // The write connection, then the read pool; each fails loudly.
        let wconn = open_conn(path, false)?;
        let (wake_tx, wake_rx) = mpsc::sync_channel(1);
        let ck = Arc::new(Checkpointer {
            frames: Box::new(std::sync::atomic::AtomicI32::new(0)),
            copied: Default::default(),
            finish: Default::default(),
            last_commit: Default::default(),
            wake: wake_tx,
        });
        unsafe {
            let frames = &*ck.frames as *const std::sync::atomic::AtomicI32 as *mut std::os::raw::c_void;
            rusqlite::ffi::sqlite3_wal_hook(wconn.handle(), Some(wal_hook), frames);
        }
        let cconn = open_conn(path, false)?;
        let ck2 = ck.clone();
        std::thread::Builder::new().name("checkpointer".into()).spawn(move || checkpointer_loop(cconn, ck2, wake_rx)).unwrap();
        let writes: Arc<(Mutex<WriteQueues>, Condvar)> = Arc::default();
        let w2 = writes.clone();
        std::thread::Builder::new().name("writer".into()).spawn(move || writer_loop(wconn, w2, ck)).unwrap();
        let (read_tx, read_rx) = mpsc::channel::<ReadJob>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        for i in 0..read_conns {
            let conn = open_conn(path, true)?;
            let rx = read_rx.clone();
            std::thread::Builder::new()
                .name(format!("reader-{}", i))
                .spawn(move || loop {
                    let job = { rx.lock().unwrap().recv() };
                    match job {
                        Ok(job) => job(&conn),
                        Err(_) => return,
                    }
                })
                .unwrap();
        }
        Ok(Db { read_tx, writes, names: Arc::default(), read_conns })
    }

    /// read runs f in one read transaction (BEGIN … COMMIT) on a read
    /// connection.
    pub async fn read<T: Send + 'static>(&self, f: impl FnOnce(&Connection) -> Result<T> + Send + 'static) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let job: ReadJob = Box::new(move |c: &Connection| {
            let r = (|| {
                c.prepare_cached("BEGIN")?.execute([])?;
                let r = f(c);
                let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
                let e = c.prepare_cached(end).and_then(|mut s| s.execute([]));
                let v = r?;
                e?;
                Ok(v)
            })();
            let _ = tx.send(r);
        });
        self.read_tx.send(job).map_err(|_| AppError::Unavailable("The site is shutting down. Please try again in a moment.".into()))?;
        rx.await.map_err(|_| AppError::Internal("read dropped".into()))?
    }

    fn submit<T: Send + 'static>(
        &self,
        coalesce: bool,
        mut f: impl FnMut(&Connection) -> Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T>> {
        let (tx, rx) = oneshot::channel();
        let slot: Arc<Mutex<Option<Result<T>>>> = Arc::new(Mutex::new(None));
        let slot2 = slot.clone();
        let job = WriteJob {
            run: Box::new(move |c: &Connection| {
                let r = f(c);
                let ok = r.is_ok();
                *slot.lock().unwrap() = Some(r);
                ok
            }),
            finish: Box::new(move |end: Result<()>| {
                let r = slot2.lock().unwrap().take();
                let _ = tx.send(match (r, end) {
                    (Some(Ok(v)), Ok(())) => Ok(v),
                    (Some(Err(e)), _) => Err(e),
                    (_, Err(e)) => Err(e),
                    (None, Ok(())) => Err(AppError::Internal("write not run".into())),
                });
            }),
        };
        let (lock, cv) = &*self.writes;
        {
            let mut q = lock.lock().unwrap();
            if coalesce {
                q.coalesced.push_back(job);
            } else {
                q.own.push_back(job);
            }
        }
        cv.notify_one();
        rx
    }

    /// write runs f in a write transaction of its own, BEGIN IMMEDIATE …
    /// COMMIT, on the writer thread, and returns once it has committed.
    pub async fn write<T: Send + 'static>(&self, f: impl FnMut(&Connection) -> Result<T> + Send + 'static) -> Result<T> {
        self.submit(false, f).await.map_err(|_| AppError::Internal("write dropped".into()))?
    }

    /// coalesce is write for a touch: those queued at one moment share one
    /// transaction.
    pub async fn coalesce<T: Send + 'static>(&self, f: impl FnMut(&Connection) -> Result<T> + Send + 'static) -> Result<T> {
        self.submit(true, f).await.map_err(|_| AppError::Internal("write dropped".into()))?
    }
}

fn exec(c: &Connection, sql: &str) -> Result<()> {
    c.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The writer thread: takes the writes in arrival order (each queue first
/// come, first served; when both hold writes, one at random, as Go's
/// select), a coalesced batch of up to MAX_COALESCED touches at a time.
fn writer_loop(c: Connection, writes: Arc<(Mutex<WriteQueues>, Condvar)>, ck: Arc<Checkpointer>) {
    let (lock, cv) = &*writes;
    let mut next_restart = 0i64;
    loop {
        let mut batch: Vec<WriteJob> = Vec::new();
        {
            let mut q = lock.lock().unwrap();
            while q.own.is_empty() && q.coalesced.is_empty() {
                q = cv.wait(q).unwrap();
            }
            let take_coalesced = match (q.own.is_empty(), q.coalesced.is_empty()) {
                (true, false) => true,
                (false, true) => false,
                _ => rand::rng().random_bool(0.5),
            };
            if take_coalesced {
                let n = q.coalesced.len().min(MAX_COALESCED);
                batch.extend(q.coalesced.drain(..n));
            } else {
                batch.push(q.own.pop_front().unwrap());
            }
        }
        transact(&c, batch, &ck, &mut next_restart);
    }
}

/// transact runs batch in one transaction (BEGIN IMMEDIATE … COMMIT) and
/// answers its writes. A write that fails is answered with its error and
/// the others of its batch run again, in a transaction without it.
fn transact(c: &Connection, mut batch: Vec<WriteJob>, ck: &Checkpointer, next_restart: &mut i64) {
    loop {
        if let Err(e) = exec(c, "BEGIN IMMEDIATE") {
            for j in batch {
                (j.finish)(Err(e.clone()));
            }
            return;
        }
        let mut failed = None;
        for (i, j) in batch.iter_mut().enumerate() {
            if !(j.run)(c) {
                failed = Some(i);
                break;
            }
        }
        match failed {
            None => {
                let end = exec(c, "COMMIT");
                if end.is_err() {
                    let _ = exec(c, "ROLLBACK");
                } else {
                    ck.committed(c, next_restart);
                }
                for j in batch {
                    (j.finish)(end.clone());
                }
                return;
            }
            Some(i) => {
                let _ = exec(c, "ROLLBACK");
                let j = batch.remove(i);
                (j.finish)(Ok(())); // answered with its own error
                if batch.is_empty() {
                    return;
                }
            }
        }
    }
}


// ---------------------------------------------------------------- checkpointer

/// The checkpointer of sqlitedb/checkpointer.go: the write connection's WAL
/// hook (which also turns SQLite's automatic checkpoints off) records the
/// WAL's size after each commit; the writer, after each commit, wakes a
/// thread of its own with its own connection to run PASSIVE checkpoints
/// (each pass's pages flushed to the database file), takes the finishing
/// step itself once the WAL holds 40,000 frames after a background
/// checkpoint, runs a RESTART past 60,000, and the thread truncates the WAL
/// once writes have stopped for 2 s.
const WAL_CHECKPOINT_FRAMES: i64 = 1000;
const WAL_HARD_LIMIT: i64 = 60 * WAL_CHECKPOINT_FRAMES;
const WAL_FINISH_FRAMES: i64 = 40 * WAL_CHECKPOINT_FRAMES;
const CATCH_UP_FRAMES: i64 = 100;
const MAX_PASSES: usize = 8;
const CHECKPOINT_IDLE_NANOS: i64 = 2_000_000_000;

struct Checkpointer {
    frames: Box<std::sync::atomic::AtomicI32>, // written by the WAL hook
    copied: std::sync::atomic::AtomicI64,
    finish: std::sync::atomic::AtomicBool,
    last_commit: std::sync::atomic::AtomicI64,
    wake: mpsc::SyncSender<()>,
}

unsafe extern "C" fn wal_hook(
    frames: *mut std::os::raw::c_void,
    _db: *mut rusqlite::ffi::sqlite3,
    _schema: *const std::os::raw::c_char,
    n: std::os::raw::c_int,
) -> std::os::raw::c_int {
    (*(frames as *const std::sync::atomic::AtomicI32)).store(n, std::sync::atomic::Ordering::Relaxed);
    rusqlite::ffi::SQLITE_OK
}

/// checkpoint runs PRAGMA wal_checkpoint(mode) on c: (log, copied, ok).
fn checkpoint_on(c: &Connection, ck: &Checkpointer, mode: &str) -> (i64, i64, bool) {
    let r: rusqlite::Result<(i64, i64, i64)> =
        c.query_row(&format!("PRAGMA wal_checkpoint({})", mode), [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
    match r {
        Ok((_busy, log, copied)) if copied >= 0 => {
            ck.copied.store(copied, std::sync::atomic::Ordering::Relaxed);
            (log, copied, true)
        }
        Ok(_) => (0, 0, false),
        Err(e) => {
            eprintln!("checkpoint {}: {}", mode, e);
            (0, 0, false)
        }
    }
}

/// syncMain: flush the main database file (xSync, NORMAL), as SQLite does
/// after a checkpoint that copied the whole WAL.
fn sync_main(c: &Connection) -> bool {
    unsafe {
        let db = c.handle();
        let mut f: *mut rusqlite::ffi::sqlite3_file = std::ptr::null_mut();
        let rc = rusqlite::ffi::sqlite3_file_control(
            db,
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_FILE_POINTER,
            &mut f as *mut _ as *mut std::os::raw::c_void,
        );
        if rc != rusqlite::ffi::SQLITE_OK || f.is_null() || (*f).pMethods.is_null() {
            return false;
        }
        match (*(*f).pMethods).xSync {
            Some(sync) => sync(f, rusqlite::ffi::SQLITE_SYNC_NORMAL) == rusqlite::ffi::SQLITE_OK,
            None => false,
        }
    }
}

impl Checkpointer {
    /// committed: after each commit, on the writer thread.
    fn committed(&self, w: &Connection, next_restart: &mut i64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.last_commit.store(now_nanos(), Relaxed);
        let n = self.frames.load(Relaxed) as i64;
        let mut copied = self.copied.load(Relaxed);
        if n < copied {
            self.copied.store(0, Relaxed);
            *next_restart = 0;
            copied = 0;
        }
        if n >= WAL_HARD_LIMIT && n >= *next_restart {
            self.finish.store(false, Relaxed);
            if !self.restart(w) {
                *next_restart = n + WAL_CHECKPOINT_FRAMES;
            }
        } else if self.finish.swap(false, Relaxed) && n >= WAL_FINISH_FRAMES {
            checkpoint_on(w, self, "PASSIVE");
        } else if n - copied >= WAL_CHECKPOINT_FRAMES {
            let _ = self.wake.try_send(());
        }
    }

    /// restart: a RESTART checkpoint on the write connection, waiting up to
    /// 20 ms for readers of older snapshots.
    fn restart(&self, w: &Connection) -> bool {
        let _ = w.busy_timeout(std::time::Duration::from_millis(20));
        let r: rusqlite::Result<(i64, i64, i64)> =
            w.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
        let _ = w.busy_timeout(std::time::Duration::from_millis(WRITE_BUSY_TIMEOUT_MS));
        match r {
            Ok((busy, _log, copied)) => {
                if copied >= 0 {
                    self.copied.store(copied, std::sync::atomic::Ordering::Relaxed);
                }
                busy == 0
            }
            Err(_) => false,
        }
    }
}

/// The checkpointer's thread: PASSIVE passes when woken, TRUNCATE when idle.
fn checkpointer_loop(c: Connection, ck: Arc<Checkpointer>, wake: mpsc::Receiver<()>) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut truncated_at = 0i64;
    loop {
        match wake.recv_timeout(std::time::Duration::from_nanos((CHECKPOINT_IDLE_NANOS / 2) as u64)) {
            Ok(()) => {
                // catchUp: passes until few frames are left.
                let mut prev = ck.copied.load(Relaxed);
                for _ in 0..MAX_PASSES {
                    let (log, copied, ok) = checkpoint_on(&c, &ck, "PASSIVE");
                    if !ok || copied == log {
                        break;
                    }
                    if !sync_main(&c) {
                        break;
                    }
                    let n = copied - prev;
                    prev = copied;
                    if n <= CATCH_UP_FRAMES {
                        break;
                    }
                }
                let _ = wake.try_recv();
                ck.finish.store(true, Relaxed);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let last = ck.last_commit.load(Relaxed);
                if last != truncated_at && now_nanos() - last >= CHECKPOINT_IDLE_NANOS {
                    checkpoint_on(&c, &ck, "TRUNCATE");
                    truncated_at = last;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

// ---------------------------------------------------------------- actions

impl Db {
    async fn touch(&self) -> Result<i64> {
        self.coalesce(touch_random_user).await
    }

    /// CreatePost: touch a random user and create a post by them.
    pub async fn create_post(&self, title: String, description: String) -> Result<i64> {
        self.write(move |c| {
            let user_id = touch_random_user(c)?;
            let now = now_nanos();
            let r = c
                .prepare_cached(
                    "INSERT INTO posts (user_id, title, title_key, description, published_at, created_at, updated_at)\n\t\tVALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![user_id, &title, title_key(&title), &description, now, now, now]);
            match r {
                Err(e) if is_constraint(&e, 2067) || is_constraint(&e, 1555) => {
                    return Err(AppError::Invalid("Title has already been taken.".into()))
                }
                Err(e) if is_constraint(&e, 787) => return Err(AppError::NotFound("User not found.".into())),
                Err(e) => return Err(e.into()),
                Ok(_) => {}
            }
            let id = c.last_insert_rowid();
            c.prepare_cached("UPDATE users SET posts_count = posts_count + 1 WHERE id = ?")?.execute([user_id])?;
            Ok(id)
        })
        .await
    }

    /// CreateComment: touch a random user and have them comment on a random post.
    pub async fn create_comment(&self, body: String) -> Result<(i64, i64)> {
        self.write(move |c| {
            let user_id = touch_random_user(c)?;
            let post_id = pick_random_id(c, "posts")?;
            let n = c
                .prepare_cached("UPDATE posts SET comments_count = comments_count + 1 WHERE id = ?")?
                .execute([post_id])?;
            if n == 0 {
                return Err(AppError::NotFound("Post not found.".into()));
            }
            let now = now_nanos();
            let r = c
                .prepare_cached("INSERT INTO comments (post_id, user_id, body, created_at, updated_at)\n\t\tVALUES (?1, ?2, ?3, ?4, ?5)")?
                .execute(params![post_id, user_id, &body, now, now]);
            match r {
                Err(e) if is_constraint(&e, 787) => return Err(AppError::NotFound("User not found.".into())),
                Err(e) => return Err(e.into()),
                Ok(_) => {}
            }
            Ok((c.last_insert_rowid(), post_id))
        })
        .await
    }

    /// DeletePost: touch a random user and delete a random post.
    pub async fn delete_post(&self) -> Result<i64> {
        self.write(|c| {
            touch_random_user(c)?;
            let id = pick_random_id(c, "posts")?;
            let user_id: Option<i64> = c
                .prepare_cached("DELETE FROM posts WHERE id = ? RETURNING user_id")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            let user_id = user_id.ok_or_else(|| AppError::NotFound("Post not found.".into()))?;
            c.prepare_cached("UPDATE users SET posts_count = posts_count - 1 WHERE id = ?")?.execute([user_id])?;
            Ok(id)
        })
        .await
    }

    /// DeleteComment: touch a random user and delete a random comment.
    pub async fn delete_comment(&self) -> Result<(i64, i64)> {
        self.write(|c| {
            touch_random_user(c)?;
            let id = pick_random_id(c, "comments")?;
            let post_id: Option<i64> = c
                .prepare_cached("DELETE FROM comments WHERE id = ? RETURNING post_id")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            let post_id = post_id.ok_or_else(|| AppError::NotFound("Comment not found.".into()))?;
            c.prepare_cached("UPDATE posts SET comments_count = comments_count - 1 WHERE id = ?")?.execute([post_id])?;
            Ok((id, post_id))
        })
        .await
    }

    /// ShowPost: touch, then pick a post and read its page in one snapshot,
    /// picking again (up to 10 times) if the page finds it gone.
    pub async fn show_post(&self) -> Result<(Post, Vec<Comment>)> {
        self.touch().await?;
        let mut last = Err(AppError::Internal("no attempt".into()));
        for _ in 0..10 {
            let names = self.names.clone();
            last = self
                .read(move |c| {
                    let id = pick_random_id(c, "posts")?;
                    post_page(c, &names, id)
                })
                .await;
            if !matches!(last, Err(AppError::Gone(_))) {
                break;
            }
        }
        last
    }

    /// ListPosts: touch, then up to limit posts from a random id on.
    pub async fn list_posts(&self, limit: i64) -> Result<(i64, Vec<Post>)> {
        self.touch().await?;
        let names = self.names.clone();
        self.read(move |c| {
            let (lo, hi): (Option<i64>, Option<i64>) = c
                .prepare_cached("SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)")?
                .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(0));
            let mut from = lo;
            if hi > lo {
                from += rand::rng().random_range(0..(hi - lo + 1));
            }
            let posts = query_posts(c, &names, FROM_ID_SQL, from, limit)?;
            Ok((from, posts))
        })
        .await
    }

    /// ShowUser: touch a random user, then read that user's page.
    pub async fn show_user(&self, limit: i64) -> Result<(User, Vec<Post>, Vec<Comment>)> {
        let id = self.touch().await?;
        let names = self.names.clone();
        self.read(move |c| user_page(c, &names, id, limit)).await
    }

    /// PointRead: a random user's screen name in one statement.
    pub async fn point_read(&self) -> Result<String> {
        let n: i64 = rand::rng().random_range(0..=i64::MAX);
        let name: Option<String> = self
            .read(move |c| Ok(c.prepare_cached(POINT_READ_SQL)?.query_row([n], |r| r.get(0))?))
            .await?;
        name.ok_or_else(|| AppError::NotFound("There are no users to pick from.".into()))
    }

    /// PostPage (GET /posts/{id}).
    pub async fn post_page(&self, id: i64) -> Result<(Post, Vec<Comment>)> {
        let names = self.names.clone();
        self.read(move |c| post_page(c, &names, id)).await
    }

    /// PostsBefore (GET /).
    pub async fn posts_before(&self, before: i64, limit: i64) -> Result<Vec<Post>> {
        let names = self.names.clone();
        self.read(move |c| query_posts(c, &names, FRONT_PAGE_SQL, before, limit)).await
    }

    pub async fn sqlite_version(&self) -> Result<String> {
        self.read(|c| Ok(c.query_row("SELECT sqlite_version()", [], |r| r.get(0))?)).await
    }
}
