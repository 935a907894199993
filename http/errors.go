package http

import (
	"context"
	"errors"
	"net/http"

	"github.com/loremnews/loremnews"
)

// statusFor maps a domain error code to its HTTP status. It is the only
// place that does.
func statusFor(code string) int {
	switch code {
	case loremnews.EINVALID:
		return http.StatusUnprocessableEntity
	case loremnews.ENOTFOUND:
		return http.StatusNotFound
	case loremnews.EGONE:
		return http.StatusGone
	case loremnews.EFORBIDDEN:
		return http.StatusForbidden
	case loremnews.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case loremnews.ETOOMANY:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// statusTitles head the error page of each status renderError answers
// with, so the reader sees at a glance what kind of failure it was; any
// other status is headed "Error".
var statusTitles = map[int]string{
	http.StatusNotFound:              "Not found",
	http.StatusGone:                  "Deleted",
	http.StatusForbidden:             "Forbidden",
	http.StatusUnprocessableEntity:   "Invalid input",
	http.StatusServiceUnavailable:    "Busy",
	http.StatusRequestEntityTooLarge: "Too large",
	http.StatusBadRequest:            "Bad request",
	http.StatusRequestTimeout:        "Too slow",
	http.StatusTooManyRequests:       "Too many attempts",
}

type errorPage struct {
	basePage
	Message string
}

// renderError answers with the page for err. Internal errors are logged
// with their details; the reader sees only a generic message.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusFor(loremnews.ErrorCode(err))
	var mbe *http.MaxBytesError
	var bre *badRequestError
	switch {
	case errors.As(err, &bre):
		status, err = http.StatusBadRequest, loremnews.Errorf(loremnews.EINVALID, "%s", bre.msg)
	case errors.As(err, &mbe):
		status = http.StatusRequestEntityTooLarge
		err = loremnews.Errorf(loremnews.EINVALID, "The request is too large (limit %d bytes).", mbe.Limit)
	case errors.Is(err, errSlowBody):
		// The connection's read deadline has passed: say so and close it.
		h.log.Debug("slow request body", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Connection", "close")
		status = http.StatusRequestTimeout
		err = loremnews.Errorf(loremnews.EINVALID, "The request body did not arrive in time.")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody will read this response.
		h.log.Debug("client gone", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(499)
		return
	}
	msg := loremnews.ErrorMessage(err)
	switch {
	case status == http.StatusInternalServerError:
		h.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	case status == http.StatusServiceUnavailable:
		h.log.Warn("unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
	}
	title := statusTitles[status]
	if title == "" {
		title = "Error"
	}
	h.render(w, r, status, &errorPage{basePage: basePage{Title: title}, Message: msg})
}

func notFound(msg string) error { return loremnews.Errorf(loremnews.ENOTFOUND, "%s", msg) }

// badRequestError is a request the web layer cannot read (a malformed
// query parameter): 400. It is not a domain error, so it lives here.
type badRequestError struct{ msg string }

func (e *badRequestError) Error() string { return e.msg }

func badRequest(msg string) error { return &badRequestError{msg} }
func forbidden(msg string) error  { return loremnews.Errorf(loremnews.EFORBIDDEN, "%s", msg) }
