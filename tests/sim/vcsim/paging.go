// paging.go - vCenter's paging of RetrievePropertiesEx results (-paging),
// which vcsim 0.24 does not do: it ignores RetrieveOptions.maxObjects,
// answers with the whole result, and has no ContinueRetrievePropertiesEx
// or CancelRetrievePropertiesEx at all.
//
// With -paging, a RetrievePropertiesEx whose options.maxObjects is N > 0
// is carried out by vcsim as usual; then its reply's objects are cut into
// pages of N.  The first page goes back with a token, the rest are kept
// under that token for the caller's session.  As the vSphere API reference
// says of RetrieveResult.token: each token is good for one
// ContinueRetrievePropertiesEx, in the session that got it, which answers
// the next page and, unless it was the last one, a new token.
// CancelRetrievePropertiesEx drops what a token holds.  A token that is
// unknown, used already, cancelled or from another session is refused with
// InvalidArgument (invalidProperty "token"); the reference does not name
// vCenter's fault for it, so that type is ours.  Without maxObjects (or
// without -paging) the whole result comes in one reply, as from vcsim.
//
// The objects are cut out of vcsim's own reply bytes, so every page holds
// exactly what the one reply held, in the same order.  faults.go's rules
// apply to these methods as to any other ("*" matches, the property
// collector has no entity name).
package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

var pagingOn bool // -paging

type pendingPages struct {
	session string
	max     int
	objects [][]byte // the <objects> elements not yet sent
}

var pages = struct {
	sync.Mutex
	next int
	held map[string]*pendingPages
}{held: map[string]*pendingPages{}}

func sessionOf(r *http.Request) string {
	if c, err := r.Cookie("vmware_soap_session"); err == nil {
		return c.Value
	}
	return ""
}

// splitObjects returns the raw <objects> elements of a RetrievePropertiesEx
// reply (children of returnval), or ok false when the reply is not one.
func splitObjects(reply []byte) (objs [][]byte, ok bool) {
	d := xml.NewDecoder(bytes.NewReader(reply))
	depth, start := 0, int64(-1)
	returnval := false
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if err == io.EOF {
			return objs, returnval
		}
		if err != nil {
			return nil, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 4 && t.Name.Local == "returnval" {
				returnval = true
			}
			if depth == 5 && t.Name.Local == "objects" {
				start = off
			}
		case xml.EndElement:
			if depth == 5 && t.Name.Local == "objects" && start >= 0 {
				objs = append(objs, reply[start:d.InputOffset()])
				start = -1
			}
			depth--
		}
	}
}

// writePage answers method with objs and, when rest is non-empty, a new
// token that holds rest.
func writePage(w http.ResponseWriter, method, session string, max int, objs, rest [][]byte) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `%s<%sResponse xmlns="urn:vim25"><returnval>`, soapHead, method)
	for _, o := range objs {
		b.Write(o)
	}
	if len(rest) > 0 {
		pages.Lock()
		pages.next++
		token := strconv.Itoa(pages.next)
		pages.held[token] = &pendingPages{session: session, max: max, objects: rest}
		pages.Unlock()
		fmt.Fprintf(&b, `<token>%s</token>`, token)
	}
	fmt.Fprintf(&b, `</returnval></%sResponse>%s`, method, soapTail)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

func badToken(w http.ResponseWriter, token string) {
	injectSoapFault(w, &types.InvalidArgument{InvalidProperty: "token"},
		fmt.Sprintf("A specified parameter was not correct: token %q", token))
}

// take removes and returns what token holds for session, or nil.
func take(token, session string) *pendingPages {
	pages.Lock()
	defer pages.Unlock()
	p := pages.held[token]
	if p == nil || p.session != session {
		return nil
	}
	delete(pages.held, token)
	return p
}

// servePaging answers the paging methods when -paging is on (true), else
// leaves the call to vcsim (false).
func servePaging(w http.ResponseWriter, r *http.Request, inner http.Handler, m *simulator.Method) bool {
	if !pagingOn {
		return false
	}
	session := sessionOf(r)
	switch req := m.Body.(type) {
	case *types.RetrievePropertiesEx:
		max := int(req.Options.MaxObjects)
		if max <= 0 {
			return false
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		objs, ok := splitObjects(rec.Body.Bytes())
		if rec.Code != http.StatusOK || !ok || len(objs) <= max {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return true
		}
		writePage(w, "RetrievePropertiesEx", session, max, objs[:max], objs[max:])
		return true
	case *types.ContinueRetrievePropertiesEx:
		if !authenticated(inner, r) {
			return false // vcsim refuses it: NotAuthenticated
		}
		p := take(req.Token, session)
		if p == nil {
			badToken(w, req.Token)
			return true
		}
		n := p.max
		if n > len(p.objects) {
			n = len(p.objects)
		}
		writePage(w, "ContinueRetrievePropertiesEx", session, p.max, p.objects[:n], p.objects[n:])
		return true
	case *types.CancelRetrievePropertiesEx:
		if !authenticated(inner, r) {
			return false
		}
		p := take(req.Token, session)
		if p == nil {
			badToken(w, req.Token)
			return true
		}
		log.Printf("vcsim: -paging: CancelRetrievePropertiesEx: token %s dropped with %d objects",
			req.Token, len(p.objects))
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, `%s<CancelRetrievePropertiesExResponse xmlns="urn:vim25"></CancelRetrievePropertiesExResponse>%s`,
			soapHead, soapTail)
		return true
	}
	return false
}
