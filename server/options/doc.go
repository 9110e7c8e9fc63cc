// Package options holds Hearth's start-up options (SPEC §17): their Go
// shape, their defaults, and how they are read from options.json and from
// command-line overrides.
//
// # Where options come from
//
// Options are read once, at start, by the binary's main, and then passed as
// plain values to the constructors that need them. No package reads them
// again, and nothing here reads files or the environment at import time.
// Changing an option means restarting Hearth (the Home Assistant add-on is
// restarted by the Supervisor when its options are saved).
//
//   - As a Home Assistant add-on, the Supervisor writes /data/options.json:
//     the merge of the add-on's defaults and the user's options, already
//     checked against the add-on's schema. Optional keys the user left unset
//     are absent from that file, never null.
//   - As a plain binary, the same file is read from the data directory
//     (--data DIR, so DIR/options.json). A missing file means every default.
//   - After the file, each `hearth serve --option key=value` is applied in
//     order with [Options.Set]; the key is the JSON key of options.json and
//     the value is JSON when it parses as JSON, else a bare string.
//
// Then [Options.Validate] runs once more over the result; an invalid option
// fails start with an [*Error] that names it.
//
// # Reading rules
//
//   - An absent key, and a key whose value is JSON null, keep the default.
//     An empty list means the same as an absent one (nothing configured),
//     except for clients, which must list at least one client.
//   - An unknown key (a typo) and a key given twice are refused, at the top
//     level and inside clients, project_links, namespace_renames and
//     ollama_models, naming the key.
//   - A value of the wrong JSON type is refused naming the option. Whole
//     numbers must be written as JSON integers; embed_timeout_s may be any
//     number (the Supervisor writes a float schema as 2.0).
//   - Values that name things on a forge are case-insensitive there, so they
//     are lower-cased on reading (ASCII only): github_owner, forge_owner,
//     forge_hosts, project_links names and namespaces, hubs and
//     namespace_renames; so is the hex of token_sha256. Client names are
//     Hearth's own and must already be lower case. Trailing slashes are dropped from URLs, so
//     "http://host:8080/v1/" is the OpenAI-style server "http://host:8080/v1".
//   - An empty string for an optional string (github_owner, forge_owner,
//     ollama_url, ollama_fallback_url, embed_url, a client's ip or
//     token_sha256) means unset.
//
// # Decisions
//
//   - A client may carry both ip and token_sha256: the token authenticates
//     it as a token client with its scopes, and the address identifies it as
//     an address client, which gets read at most (SPEC R-A4). A client with
//     neither is a token client whose token the server generates. Names,
//     addresses and token hashes are each unique across clients, so that one
//     credential never matches two clients. An address is a single address
//     (no range); an IPv4-mapped IPv6 address is read as its IPv4 form.
//   - project_links namespaces are repository namespaces (github/, gitea/ or
//     local/); hubs may be any valid namespace.
//   - namespace_renames from and to are owner prefixes, github/<owner> or
//     gitea/<owner>; the forge may change (a move from GitHub to a Gitea
//     host). All renames apply at once, so chains are refused: a from may
//     not be another rename's to (write a→c, not a→b and b→c), and each
//     from appears once.
//   - forge_owner needs forge_hosts; ollama_fallback_url must differ from
//     ollama_url.
//   - Ranges: candidate_expiry_days 0–3650 (0 = off), retention_deleted_days
//     1–3650, anchor_sweep_hours 1–168, hard_context_limit_tokens 100–100000,
//     context_budget_tokens 100 up to hard_context_limit_tokens,
//     ollama_timeout_s 1–3600, embed_timeout_s 0.001–60.
//   - URLs are absolute http or https URLs with a host and no user name,
//     password, query or fragment. Error text never repeats a URL, nor any
//     value holding an '@', nor a token_sha256 value (a user may have pasted
//     the token itself there).
//   - Model names are 1–256 bytes of printable UTF-8 without spaces.
package options
