//! The pages, byte for byte as the Go app's templ layout (http/views.templ,
//! as compiled in views_templ.go) and hand-written rows (http/fragments.go)
//! write them for a visitor who is not signed in.

use crate::db::{Comment, Post, User};
use crate::text::{body_excerpt, escape_into, excerpt, paragraphs, time_ago};
use std::fmt::Write;
use std::sync::OnceLock;

const SITE_NAME: &str = "Lorem News";
const SITE_DESCRIPTION: &str = "Lorem News: a Hacker-News-style community of posts and comments, newest first.";

/// The style sheet's fingerprinted URL, as http/static.go names it:
/// /static/style.<first 5 bytes of its SHA-256, hex>.css.
pub fn style_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let body: &[u8] = include_bytes!("../../../http/static/style.css");
        let sum = Sha256::digest(body);
        let mut hex = String::new();
        for b in &sum[..5] {
            let _ = write!(hex, "{:02x}", b);
        }
        format!("/static/style.{}.css", hex)
    })
}

/// layout(): everything around a page's content, for a visitor (no
/// current user, no flash).
pub fn layout(title: &str, description: &str, content: impl FnOnce(&mut String)) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    if title.is_empty() {
        escape_into(&mut out, SITE_NAME);
    } else {
        let full = format!("{} · {}", title, SITE_NAME);
        escape_into(&mut out, &full);
    }
    out.push_str("</title><meta name=\"description\" content=\"");
    escape_into(&mut out, if description.is_empty() { SITE_DESCRIPTION } else { description });
    out.push_str("\"><link rel=\"stylesheet\" href=\"");
    escape_into(&mut out, style_url());
    out.push_str("\"></head><body><header class=\"site\"><a class=\"brand\" href=\"/\">Lorem News</a><nav>");
    out.push_str("<a href=\"/signin\">Sign in</a> <a href=\"/signup\">Sign up</a>");
    out.push_str("</nav></header><main>");
    content(&mut out);
    out.push_str("</main><footer class=\"site\">Lorem News — a Hacker-News-style demo on embedded SQLite.</footer></body></html>");
    out
}

fn int(out: &mut String, n: i64) {
    let _ = write!(out, "{}", n);
}

fn plural(out: &mut String, n: i64, one: &str, many: &str) {
    int(out, n);
    out.push(' ');
    out.push_str(if n == 1 { one } else { many });
}

/// author(): a link to the user (a visitor owns nothing, so never "you").
fn author(out: &mut String, id: i64, name: &str) {
    out.push_str("<a href=\"/users/");
    int(out, id);
    out.push_str("\">");
    escape_into(out, name);
    out.push_str("</a>");
}

fn more_link(out: &mut String, url: &str, label: &str) {
    if !url.is_empty() {
        out.push_str("<p class=\"more\"><a href=\"");
        escape_into(out, url);
        out.push_str("\" rel=\"next\">");
        escape_into(out, label);
        out.push_str("</a></p>");
    }
}

fn title_link(out: &mut String, id: i64, title: &str) {
    out.push_str("<a class=\"title\" href=\"/posts/");
    int(out, id);
    out.push_str("\">");
    escape_into(out, title);
    out.push_str("</a>");
}

/// indexView with postRows. `title` is the page's title ("" on the front
/// page and the benchmark's index, "Older posts" on later pages).
pub fn index_page(now: i64, title: &str, heading: &str, posts: &[Post], more: &str) -> String {
    layout(title, "", |out| {
        out.push_str("<h1 class=\"visually-hidden\">");
        escape_into(out, heading);
        out.push_str("</h1>");
        if !posts.is_empty() {
            out.push_str("<ol class=\"posts\">");
            for p in posts {
                out.push_str("<li id=\"post-");
                int(out, p.id);
                out.push_str("\">");
                title_link(out, p.id, &p.title);
                out.push_str("<div class=\"meta\">by ");
                author(out, p.user_id, &p.author_name);
                out.push_str(" · ");
                time_ago(out, now, p.created_at);
                out.push_str(" · <a href=\"/posts/");
                int(out, p.id);
                out.push_str("#comments\">");
                plural(out, p.comments_count, "comment", "comments");
                out.push_str("</a></div></li>");
            }
            out.push_str("</ol>");
            more_link(out, more, "More posts");
        } else if !title.is_empty() {
            out.push_str("<p class=\"empty\">No older posts. <a href=\"/\">Back to the newest.</a></p>");
        } else {
            out.push_str("<p class=\"empty\">No posts yet. ");
            out.push_str("</p>");
        }
    })
}

/// postView with postCommentRows, as a visitor sees it.
pub fn post_page(now: i64, p: &Post, comments: &[Comment]) -> String {
    let description = excerpt(&p.description, 155);
    let mut more = String::new();
    // PostCommentsPageSize = 20
    if comments.len() >= 20 && p.comments_count > comments.len() as i64 {
        more = format!("/posts/{}/comments?before={}", p.id, comments[comments.len() - 1].id);
    }
    layout(&p.title, &description, |out| {
        out.push_str("<article class=\"post\"><h1>");
        escape_into(out, &p.title);
        out.push_str("</h1><div class=\"meta\">by");
        out.push(' ');
        author(out, p.user_id, &p.author_name);
        out.push_str(" · ");
        time_ago(out, now, p.created_at);
        out.push_str("</div><div class=\"description\">");
        paragraphs(out, &p.description);
        out.push_str("</div></article><section id=\"comments\" class=\"comments\"><h2>");
        plural(out, p.comments_count, "comment", "comments");
        out.push_str("</h2>");
        out.push_str("<p><a href=\"");
        let signin = format!("/signin?return_to=/posts/{}", p.id);
        escape_into(out, &signin);
        out.push_str("\">Sign in</a> to comment.</p>");
        out.push_str("<ol class=\"comment-list\">");
        for c in comments {
            out.push_str("<li id=\"comment-");
            int(out, c.id);
            out.push_str("\"><div class=\"meta\">");
            author(out, c.user_id, &c.author_name);
            out.push_str(" · ");
            time_ago(out, now, c.created_at);
            out.push_str("</div><div class=\"body\">");
            paragraphs(out, &c.body);
            out.push_str("</div></li>");
        }
        out.push_str("</ol>");
        more_link(out, &more, "Older comments");
        out.push_str("</section>");
    })
}

/// userView with userPostRows and userCommentRows, as a visitor sees it.
pub fn user_page(now: i64, u: &User, posts: &[Post], comments: &[Comment]) -> String {
    let mut more_posts = String::new();
    if let Some(last) = posts.last() {
        if u.posts_count > posts.len() as i64 {
            more_posts = format!("/users/{}/posts?before={}", u.id, last.id);
        }
    }
    let mut more_comments = String::new();
    if let Some(last) = comments.last() {
        if u.comments_count > comments.len() as i64 {
            more_comments = format!("/users/{}/comments?before={}", u.id, last.id);
        }
    }
    let description = format!("{}'s posts and comments on Lorem News.", u.screen_name);
    layout(&u.screen_name, &description, |out| {
        out.push_str("<section class=\"profile\"><h1>");
        escape_into(out, &u.screen_name);
        out.push_str("</h1><p class=\"meta\">Joined");
        out.push(' ');
        time_ago(out, now, u.created_at);
        if let Some(seen) = u.last_seen_at {
            escape_into(out, " · last seen ");
            time_ago(out, now, seen);
        }
        out.push_str("</p><p class=\"meta totals\">");
        plural(out, u.posts_count, "post", "posts");
        out.push_str(" · ");
        plural(out, u.comments_count, "comment", "comments");
        out.push_str("</p>");
        if !u.about.is_empty() {
            out.push_str("<div class=\"about\">");
            paragraphs(out, &u.about);
            out.push_str("</div>");
        }
        out.push_str("</section><section id=\"posts\"><h2>Posts</h2>");
        if !posts.is_empty() {
            out.push_str("<ol class=\"posts\">");
            for p in posts {
                out.push_str("<li>");
                title_link(out, p.id, &p.title);
                out.push_str("<div class=\"meta\">");
                time_ago(out, now, p.created_at);
                out.push_str(" · ");
                plural(out, p.comments_count, "comment", "comments");
                out.push_str("</div></li>");
            }
            out.push_str("</ol>");
        } else {
            out.push_str("<p class=\"empty\">No posts.</p>");
        }
        more_link(out, &more_posts, "More posts");
        out.push_str("</section><section id=\"comments\"><h2>Comments</h2>");
        if !comments.is_empty() {
            out.push_str("<ol class=\"comment-list\">");
            for c in comments {
                out.push_str("<li id=\"comment-");
                int(out, c.id);
                out.push_str("\"><div class=\"meta\">on <a href=\"/posts/");
                int(out, c.post_id);
                out.push_str("#comment-");
                int(out, c.id);
                out.push_str("\">");
                escape_into(out, &c.post_title);
                out.push_str("</a> · ");
                time_ago(out, now, c.created_at);
                out.push_str("</div><div class=\"body\">");
                paragraphs(out, &body_excerpt(&c.body, 1500));
                out.push_str("</div></li>");
            }
            out.push_str("</ol>");
        } else {
            out.push_str("<p class=\"empty\">No comments.</p>");
        }
        more_link(out, &more_comments, "More comments");
        out.push_str("</section>");
    })
}

/// errorView: the error page of a status.
pub fn error_page(title: &str, message: &str) -> String {
    layout(title, "", |out| {
        out.push_str("<h1>");
        escape_into(out, title);
        out.push_str("</h1><p>");
        escape_into(out, message);
        out.push_str("</p><p><a href=\"/\">Back to the front page</a></p>");
    })
}
