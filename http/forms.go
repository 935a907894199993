package http

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/loremnews/loremnews"
	"github.com/mileusna/useragent"
)

// fieldErrors holds one message per invalid form field, keyed by the
// field's id, so that a form reports every problem at once, each beside
// its field.
type fieldErrors map[string]string

// Error makes a form's problems an error, to return from a validation.
func (e fieldErrors) Error() string { return e.summary() }

// summary is the line above a form that failed: how many fields to fix.
func (e fieldErrors) summary() string {
	if len(e) == 1 {
		return "Please fix the problem below."
	}
	return "Please fix the " + strconv.Itoa(len(e)) + " problems below."
}

// fieldAttrs are a form field's accessibility attributes: aria-describedby
// names its hint and its error, aria-invalid marks it invalid, and
// autofocus goes to the first invalid field of order (the form's fields in
// page order) — or, when nothing is invalid and focusIfValid is set, to
// this one. No JavaScript needed: the browser focuses and scrolls to it.
func fieldAttrs(errs fieldErrors, id, hint string, focusIfValid bool, order ...string) templ.Attributes {
	a := templ.Attributes{}
	var described []string
	if hint != "" {
		described = append(described, hint)
	}
	if errs[id] != "" {
		described = append(described, id+"-error")
		a["aria-invalid"] = "true"
	}
	if len(described) > 0 {
		a["aria-describedby"] = strings.Join(described, " ")
	}
	first := ""
	for _, f := range order {
		if errs[f] != "" {
			first = f
			break
		}
	}
	if first == id || first == "" && len(errs) == 0 && focusIfValid {
		a["autofocus"] = true
	}
	return a
}

// The sign-up rules as the page states them and as the browser checks
// them; loremnews.ValidateScreenName and ValidatePassword are the rules.
var (
	screenNameRule = strconv.Itoa(loremnews.MinScreenNameLen) + " to " + strconv.Itoa(loremnews.MaxScreenNameLen) +
		" characters: letters, digits, and _ - . (no spaces)."
	passwordRule = "At least " + strconv.Itoa(loremnews.MinPasswordLen) + " characters (at most " +
		strconv.Itoa(loremnews.MaxPasswordLen) + " bytes)."
	screenNamePattern = `[A-Za-z0-9_.\-]+`
	signUpFields      = []string{"screen-name", "password"}
)

// commentErrors ties a failed comment's message to the comment box.
func (p *postPage) commentErrors() fieldErrors {
	if p.CommentError == "" {
		return nil
	}
	return fieldErrors{"comment-body": p.CommentError}
}

// errors ties an edited comment's message to the comment box.
func (p *commentFormPage) errors() fieldErrors {
	if p.Error == "" {
		return nil
	}
	return fieldErrors{"comment-body": p.Error}
}

// browserName summarises a User-Agent header as people name browsers:
// "Chrome on Linux", "Safari on iOS". The full header stays in the cell's
// title. mileusna/useragent knows the common browsers, systems and bots.
func browserName(header string) string {
	if strings.TrimSpace(header) == "" {
		return "Unknown browser"
	}
	ua := useragent.Parse(header)
	name := ua.Name
	if name == "" {
		name = "Unknown browser"
	}
	if ua.OS != "" {
		name += " on " + ua.OS
	}
	return name
}

// pathID parses the {id} path segment. Only the canonical spelling of a
// positive integer names a page: "+1", "001" or "1e0" would give one page
// many URLs, so they are 404 like any id that cannot exist.
func pathID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != raw {
		return 0, notFound("No such page.")
	}
	return id, nil
}
