module github.com/loremnews/loremnews

go 1.26.8

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/google/uuid v1.6.0
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/crypto v0.45.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
