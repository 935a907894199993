//! loremnews-rs: an independent implementation of Lorem News's benchmarking
//! endpoints (POST /benchmarking/{action}) and of the pages their redirects
//! lead to (GET /posts/{id}, GET /), on the Go app's SQLite database file.

mod db;
mod html;
mod text;

use axum::{
    body::Body,
    extract::{Path, RawQuery, State},
    http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode},
    routing::{any, get},
    Router,
};
use db::{AppError, Db};
use rand::Rng;
use std::sync::Arc;

type Resp = Response<Body>;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const HTML: &str = "text/html; charset=utf-8";
const PLAIN: &str = "text/plain; charset=utf-8";

/// The headers every response carries (securityHeaders in middleware.go).
fn secured(mut r: Resp) -> Resp {
    let h = r.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    r
}

fn page(status: StatusCode, body: String) -> Resp {
    let len = body.len();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
    r.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    secured(r)
}

fn plain(status: StatusCode, body: String) -> Resp {
    let len = body.len();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PLAIN));
    r.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    secured(r)
}

/// http.Redirect for a POST: 303, Location, no body.
fn redirect_post(location: &str) -> Resp {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SEE_OTHER;
    r.headers_mut().insert(header::LOCATION, HeaderValue::from_str(location).unwrap());
    r.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(0));
    secured(r)
}

/// renderError: the error page of a domain error.
fn error_response(e: &AppError) -> Resp {
    let (status, msg) = match e {
        AppError::NotFound(m) => (StatusCode::NOT_FOUND, m.as_str()),
        AppError::Gone(m) => (StatusCode::GONE, m.as_str()),
        AppError::Invalid(m) => (StatusCode::UNPROCESSABLE_ENTITY, m.as_str()),
        AppError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m.as_str()),
        AppError::Internal(m) => {
            eprintln!("internal error: {}", m);
            (StatusCode::INTERNAL_SERVER_ERROR, "Internal error.")
        }
    };
    let title = match status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::GONE => "Deleted",
        StatusCode::FORBIDDEN => "Forbidden",
        StatusCode::UNPROCESSABLE_ENTITY => "Invalid input",
        StatusCode::SERVICE_UNAVAILABLE => "Busy",
        _ => "Error",
    };
    let mut r = page(status, html::error_page(title, msg));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn base64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 2);
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// A visitor's page gets the CSRF cookie withSession sets for a browser
/// without one (a random token, so no two responses share it).
fn with_csrf_cookie(mut r: Resp) -> Resp {
    let mut b = [0u8; 32];
    rand::rng().fill(&mut b);
    let v = format!("lorem_csrf={}; Path=/; HttpOnly; SameSite=Lax", base64url(&b));
    r.headers_mut().append(header::SET_COOKIE, HeaderValue::from_str(&v).unwrap());
    r
}

struct App {
    db: Db,
}

type St = State<Arc<App>>;

// ---------------------------------------------------------------- benchmarking

const ACTION_ORDER: [&str; 7] = ["post_create", "comment_create", "post_destroy", "comment_destroy", "post_show", "posts_index", "user_show"];

fn mix_weights(name: &str) -> Option<[u32; 7]> {
    match name {
        "read_heavy" => Some([10, 10, 2, 3, 25, 25, 25]),
        "write_heavy" => Some([25, 25, 5, 20, 5, 15, 5]),
        "balanced" => Some([17, 17, 5, 11, 17, 17, 16]),
        _ => None,
    }
}

fn pick_action(weights: &[u32; 7]) -> &'static str {
    let total: u32 = weights.iter().sum();
    let mut n = rand::rng().random_range(0..total);
    for (i, &w) in weights.iter().enumerate() {
        if n < w {
            return ACTION_ORDER[i];
        }
        n -= w;
    }
    ACTION_ORDER[6]
}

/// Go's %q for the action named in the 404 message (printable ASCII kept,
/// the rest escaped).
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// net/http's CrossOriginProtection.Check for a POST.
fn cross_origin(h: &HeaderMap) -> bool {
    match h.get("sec-fetch-site").map(|v| v.as_bytes()) {
        Some(b"same-origin") | Some(b"none") => return false,
        Some(_) => return true,
        None => {}
    }
    let origin = match h.get(header::ORIGIN) {
        Some(o) => o.to_str().unwrap_or(""),
        None => return false,
    };
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let o_host = origin.split_once("://").map(|(_, rest)| rest.split('/').next().unwrap_or("")).unwrap_or("");
    o_host != host
}

/// headerLines: the published request headers, one per line.
fn header_lines(h: &HeaderMap) -> String {
    let mut out = String::new();
    for k in ["Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "User-Agent"] {
        for v in h.get_all(k) {
            if let Ok(s) = std::str::from_utf8(v.as_bytes()) {
                let s = s.trim_matches([' ', '\t']);
                if text::one_line_text(s) {
                    out.push_str(k);
                    out.push_str(": ");
                    out.push_str(s);
                    out.push('\n');
                }
            }
        }
    }
    out
}

async fn benchmarking(State(app): St, method: Method, Path(action): Path<String>, headers: HeaderMap) -> Resp {
    if method != Method::POST {
        let mut r = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "405 method not allowed: the benchmarking endpoints take POST (loremnews load -m POST, hey -m POST)\n".into(),
        );
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if cross_origin(&headers) {
        return error_response_forbidden();
    }
    if action == "ceiling" {
        return plain(StatusCode::OK, "ok\n".into());
    }
    let name: &str = match mix_weights(&action) {
        Some(w) => pick_action(&w),
        None => match ACTION_ORDER.iter().find(|a| **a == action) {
            Some(a) => a,
            None if action == "point_read" => "point_read",
            None => {
                return error_response(&AppError::NotFound(format!(
                    "No benchmarking action {}; try one of post_create, comment_create, post_destroy, comment_destroy, post_show, posts_index, user_show, read_heavy, write_heavy, balanced, point_read.",
                    go_quote(&action)
                )))
            }
        },
    };
    let mut r = match run_action(&app, name, &headers).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    r.headers_mut().insert("x-benchmark-action", HeaderValue::from_static(name));
    r
}

fn error_response_forbidden() -> Resp {
    page(StatusCode::FORBIDDEN, html::error_page("Forbidden", "Cross-origin requests are not allowed."))
}

fn wrote(mut r: Resp, v: String) -> Resp {
    r.headers_mut().insert("x-benchmark-wrote", HeaderValue::from_str(&v).unwrap());
    r
}

async fn run_action(app: &App, name: &str, headers: &HeaderMap) -> Result<Resp, AppError> {
    let db = &app.db;
    Ok(match name {
        "post_create" => {
            let title = format!("Post {}", uuid::Uuid::new_v4());
            let description = text::truncate_chars(header_lines(headers), 20_000);
            let id = db.create_post(title, description).await?;
            wrote(redirect_post(&format!("/posts/{}", id)), format!("post={}", id))
        }
        "comment_create" => {
            let (id, post_id) = db.create_comment(format!("Comment {}", uuid::Uuid::new_v4())).await?;
            wrote(redirect_post(&format!("/posts/{}", post_id)), format!("comment={} post={}", id, post_id))
        }
        "post_destroy" => {
            let id = db.delete_post().await?;
            wrote(redirect_post("/"), format!("post={}", id))
        }
        "comment_destroy" => {
            let (id, post_id) = db.delete_comment().await?;
            wrote(redirect_post(&format!("/posts/{}", post_id)), format!("comment={} post={}", id, post_id))
        }
        "post_show" => {
            let (p, comments) = db.show_post().await?;
            page(StatusCode::OK, html::post_page(text::now_nanos(), &p, &comments))
        }
        "posts_index" => {
            let (from, posts) = db.list_posts(100).await?;
            page(StatusCode::OK, html::index_page(text::now_nanos(), "", &format!("Posts from #{}", from), &posts, ""))
        }
        "user_show" => {
            let (u, posts, comments) = db.show_user(100).await?;
            page(StatusCode::OK, html::user_page(text::now_nanos(), &u, &posts, &comments))
        }
        _ => {
            let name = db.point_read().await?;
            plain(StatusCode::OK, format!("Hello {}!\n", name))
        }
    })
}

// ---------------------------------------------------------------- pages

/// pathID: a positive id in its canonical form, else "No such page.".
fn path_id(raw: &str) -> Option<i64> {
    let id: i64 = raw.parse().ok()?;
    (id > 0 && id.to_string() == raw).then_some(id)
}

async fn show_post(State(app): St, Path(raw): Path<String>) -> Resp {
    let r = match path_id(&raw) {
        None => error_response(&AppError::NotFound("No such page.".into())),
        Some(id) => match app.db.post_page(id).await {
            Ok((p, comments)) => page(StatusCode::OK, html::post_page(text::now_nanos(), &p, &comments)),
            Err(AppError::Gone(_)) => {
                // http.Redirect for a GET, with the flash that says why.
                let mut r = Response::new(Body::from("<a href=\"/\">See Other</a>.\n\n"));
                *r.status_mut() = StatusCode::SEE_OTHER;
                let h = r.headers_mut();
                h.insert(header::LOCATION, HeaderValue::from_static("/"));
                h.insert(header::CONTENT_TYPE, HeaderValue::from_static(HTML));
                h.append(header::SET_COOKIE, HeaderValue::from_static("lorem_flash=post-gone; Path=/; HttpOnly; SameSite=Lax"));
                secured(r)
            }
            Err(e) => error_response(&e),
        },
    };
    with_csrf_cookie(r)
}

/// The front page: the newest 50 posts, or those before ?before=ID.
async fn index(State(app): St, RawQuery(q): RawQuery) -> Resp {
    let mut before = i64::MAX;
    if let Some(q) = q {
        for pair in q.split('&') {
            if let Some(v) = pair.strip_prefix("before=") {
                if v.is_empty() {
                    break;
                }
                match v.parse::<i64>() {
                    Ok(id) if id > 0 => before = id,
                    _ => {
                        let msg = "The \"before\" in this link must be a positive whole number, as in ?before=950; follow the More link at the bottom of a page.";
                        let r = page(StatusCode::BAD_REQUEST, html::error_page("Bad request", msg));
                        return with_csrf_cookie(r);
                    }
                }
                break;
            }
        }
    }
    let r = match app.db.posts_before(before, 51).await {
        Ok(mut posts) => {
            let (title, heading) = if before != i64::MAX { ("Older posts", "Older posts") } else { ("", "Newest posts") };
            let mut more = String::new();
            if posts.len() > 50 {
                posts.truncate(50);
                more = format!("/?before={}", posts[49].id);
            }
            page(StatusCode::OK, html::index_page(text::now_nanos(), title, heading, &posts, &more))
        }
        Err(e) => error_response(&e),
    };
    with_csrf_cookie(r)
}

async fn not_found() -> Resp {
    with_csrf_cookie(error_response(&AppError::NotFound("Page not found.".into())))
}

// ---------------------------------------------------------------- main

fn usage() -> ! {
    eprintln!("usage: loremnews-rs --db PATH [--addr HOST:PORT] [--read-conns N] | loremnews-rs version\n  (env: LOREM_RS_DB, LOREM_RS_ADDR, LOREM_RS_READ_CONNS)");
    std::process::exit(2)
}

fn main() {
    let mut db_path = std::env::var("LOREM_RS_DB").unwrap_or_default();
    let mut addr = std::env::var("LOREM_RS_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let mut read_conns: usize = std::env::var("LOREM_RS_READ_CONNS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "version" || a == "--version" {
            // The linked SQLite: its version and compile-time options, as
            // `loremnews version` prints the Go binary's.
            let c = rusqlite::Connection::open_in_memory().expect("open :memory:");
            let v: String = c.query_row("SELECT sqlite_version()", [], |r| r.get(0)).unwrap();
            println!("loremnews-rs {}\nsqlite {}\ncompile options:", env!("CARGO_PKG_VERSION"), v);
            let mut st = c.prepare("PRAGMA compile_options").unwrap();
            let opts: Vec<String> = st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
            for o in opts {
                println!("  {}", o);
            }
            return;
        }
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let mut val = || v.clone().or_else(|| args.next()).unwrap_or_else(|| usage());
        match k.as_str() {
            "--db" => db_path = val(),
            "--addr" => addr = val(),
            "--read-conns" => read_conns = val().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    if db_path.is_empty() {
        usage();
    }
    if !std::path::Path::new(&db_path).exists() {
        eprintln!("loremnews-rs: {}: no such database file (create and seed it with: loremnews seed --db {})", db_path, db_path);
        std::process::exit(1);
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if read_conns == 0 {
        read_conns = std::cmp::max(4, 2 * cpus);
    }
    let db = Db::open(&db_path, read_conns).unwrap_or_else(|e| {
        eprintln!("loremnews-rs: open {}: {}", db_path, e);
        std::process::exit(1)
    });
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let version = db.sqlite_version().await.unwrap_or_else(|e| panic!("{:?}", e));
        let app = Arc::new(App { db });
        let router = Router::new()
            .route("/benchmarking/{action}", any(benchmarking))
            .route("/posts/{id}", get(show_post))
            .route("/", get(index))
            .fallback(not_found)
            .with_state(app.clone());
        let listener = tokio::net::TcpListener::bind(&addr).await.unwrap_or_else(|e| {
            eprintln!("loremnews-rs: listen {}: {}", addr, e);
            std::process::exit(1)
        });
        println!(
            "loremnews-rs listening on http://{} (database {}, SQLite {}, {} read connections, {} worker threads)",
            listener.local_addr().unwrap(),
            db_path,
            version,
            app.db.read_conns,
            cpus
        );
        axum::serve(listener, router).await.unwrap();
    });
}
