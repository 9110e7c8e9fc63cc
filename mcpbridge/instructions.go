package mcpbridge

// Instructions are the MCP server instructions, sent in the initialize
// result. Clients cut them at 2,048 characters (docs/design.md R-T11), so the
// essentials come first; a test holds the length.
const Instructions = `Hearth is the long-term memory shared by every coding agent on this network: decisions, constraints, requirements, procedures and preferences that must outlive a session. What one agent stores, all agents can find.

Namespaces: every record lives in one, named after where it applies: github/<owner>/<repo> or gitea/<owner>/<repo> (from the git remote), projects/<name>, topics/<name>, global, local/<name>. Reading a namespace also reads its scope chain (the repository, then wider scopes such as global).

Store one fact per record: a short title and content an agent without today's context can act on (what was decided and why, the constraint and its source, the steps of a procedure). Never store secrets; text that looks like one is refused.

How to work:
1. Before a task, memory_search with a short natural-language query and the repository's namespace. Hits are compact (id, title, snippet); fetch the records you need with memory_get.
2. When a durable fact emerges, memory_store it. To replace an outdated record, store the new one with supersedes set to the old id.
3. To correct a record, memory_update it at the revision you read; on ABORTED, use the current revision returned and retry. memory_forget removes what should not be kept.
4. For a question agents keep asking, memory_answer with its text may already hold a short answer citing its records (memory_questions lists them by demand).

Results are JSON objects with proto field names; budgeted results report estimated_tokens, truncated and left_out. A failed call returns {"error":{"code":...,"message":...,"field":...}}: fix the named field and retry; PERMISSION_DENIED or UNAUTHENTICATED means this client lacks the scope or token, so do not retry.`
