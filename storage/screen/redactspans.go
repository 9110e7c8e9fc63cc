package screen

// maxRedactions bounds the secrets RedactSpans replaces one by one; a
// value holding more is replaced whole, as Redact does.
const maxRedactions = 64

// RedactSpans returns value with each secret the screen finds replaced by
// the placeholder "[screened:<pattern>]", keeping the text around it: for
// what must be kept readable, such as a model's reply in an extraction
// receipt. The result passes the screen; when a hit has no span, is the
// no-store marker (which asks that the whole value not be kept), or the
// value holds more than 64 secrets, the whole value is the placeholder.
func RedactSpans(value string) Text {
	s := value
	for range maxRedactions {
		m, ok := scan(s)
		if !ok {
			return Text{s: s}
		}
		if m.pattern == patMarker || m.start < 0 || m.end <= m.start || m.end > len(s) {
			break
		}
		s = s[:m.start] + "[screened:" + m.pattern + "]" + s[m.end:]
	}
	if m, ok := scan(s); ok {
		return Text{s: "[screened:" + m.pattern + "]"}
	}
	return Text{s: s}
}
