// Package screen is the trust boundary for persisted text: every string Hearth
// writes to disk is first turned into a Text by this package, and storage's
// write functions accept only Text, so a new write path cannot skip the screen
// (SPEC R-S1..R-S6).
//
// # What is refused
//
// A value that looks like a secret is refused with a *Refusal that names the
// field and the pattern, never the secret itself. The pattern names are
// stable (they appear in errors, in the audit and in "[screened:<pattern>]"
// placeholders); Patterns lists them:
//
//   - no-store-marker: the literal do-not-store marker, in any case, anywhere.
//     The name deliberately does not spell the marker, so that the placeholder
//     "[screened:no-store-marker]" itself passes the screen.
//   - private-key: a PEM or OpenSSH private key header followed by key
//     material. Public keys, certificates and a bare header without a body pass.
//   - anthropic-key, openai-key, github-token, gitlab-token, slack-token,
//     slack-webhook, aws-access-key, google-api-key, npm-token, stripe-key:
//     provider tokens recognised by their prefix and shape.
//   - aws-secret-key: a 40-character AWS secret assigned to a name such as
//     aws_secret_access_key.
//   - jwt: a JSON Web Token (header.payload.signature, both JSON parts base64url).
//   - url-userinfo: a password in a URL, scheme://user:pass@host.
//   - credential-assignment: a credential-named key assigned a real-looking
//     value: password=…, "secret": "…", api_key: …, Authorization: Bearer ….
//   - url-credential-param: (Anchor only) a url: anchor whose query, fragment
//     or path parameter is named as a credential.
//
// # Names
//
// A key or parameter name is judged by its words: it is split on
// punctuation and camelCase (X-Api-Key, apiKey, API_KEY and api-key all read
// as "api key"), and its last word decides. password, passwd, passphrase,
// secret, token, credential(s) and authorization are credentials, as is
// key after api, access, secret, private, signing, encryption, master, app,
// auth, client, account, session or subscription, and pwd after another word
// (a bare PWD is the shell's working directory). A token after page, next,
// prev, continuation, cursor or sync is a pagination cursor and is kept. So
// access_token, apiKey, DB_PASSWORD and client_secret are credentials, and
// password_policy, token_budget, max_tokens, tokenizer and api_key_id are
// not. A bare pass is a credential only in a URL (PASS: is test output). In
// URL parameters (in url: anchors, and after ? or & in text) sig,
// signature, auth and session names (session, session_id, sessionid,
// jsessionid, phpsessid) are credentials too: there they grant access by
// themselves. A bare key= is kept there (a Google key is still caught by
// its shape).
//
// # Placeholders
//
// A credential-assignment value or URL password is refused only when it
// looks real. After percent-decoding, it is a placeholder, and passes, when
// it is:
//
//   - shorter than 8 characters, or contains whitespace (it reads as prose);
//   - a reference: it starts with $ (${VAR}, $(cmd), ${{ secrets.X }}), {, [,
//     <, #{ or is %VAR%; or it names where a secret lives (a path such as
//     /run/secrets/db or ~/.ssh/id_ed25519, or arn:, urn:, vault:, op://,
//     env:, file:);
//   - masked or a well-known dummy: it holds xxxx, ****, ..., …, a run of six
//     identical characters, one of example, deadbeef, changeme, placeholder,
//     redacted, dummy, sample, replace, insert (any case), or your, fake,
//     abcd, 1234 (lower, UPPER or Title case);
//   - unquoted code: an identifier path, call, index or composite literal
//     such as cfg.Password, os.Getenv("X"), env["X"], *opts.Secret or
//     oauth2.Token{, a parenthesised expression, a 0x… number, or a bare
//     identifier without digits (password=password) or with one inner
//     number in a name of two or more words (testRSA2048PrivateKey; but
//     Summer2024 and Xk9mP2vQ are refused);
//   - a kebab- or snake-case name of lower-case words, optionally numbered
//     (client-valid-token-1, staging_db_v2);
//   - made of one class only: letters (with - _ . / : separators), digits,
//     or symbols.
//
// Anything else, at least 8 characters mixing letters with digits or
// symbols, or digits with symbols, is real-looking and refused. The same
// dummy test keeps well-known examples of provider tokens (AWS's
// AKIAIOSFODNN7EXAMPLE, Slack's XXXX webhooks, ghp_xxxx…) from being refused.
//
// # URL anchors
//
// Anchor adds the R-S3 rules for url: anchors: any userinfo (even a user
// without a password) is refused as url-userinfo, and a query, fragment or
// ;path parameter whose name reads as a credential (above) is refused as
// url-credential-param, whatever its value.
package screen

import "fmt"

// Text is a string that passed the screen. Its zero value is the empty string,
// which is always safe.
type Text struct{ s string }

// String returns the screened value.
func (t Text) String() string { return t.s }

// Refusal reports that a value was refused. Field and Pattern are safe to show
// to callers and to write to the audit; the refused value is never kept.
type Refusal struct {
	Field   string // the request field, e.g. "content" or "changes.anchors[2]"
	Pattern string // the stable pattern name, e.g. "aws-access-key"
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: refused: looks like a secret (pattern %s)", r.Field, r.Pattern)
}
