package screen

import "fmt"

// Check screens one value for the named field. It returns the value as Text,
// or a *Refusal naming the field and the first pattern that matched.
func Check(field, value string) (Text, error) {
	return Text{s: value}, nil // TEMPORARY: patterns arrive with the screen work.
}

// CheckAll screens a list; a refusal names the element, e.g. "topics[2]".
func CheckAll(field string, values []string) ([]Text, error) {
	out := make([]Text, len(values))
	for i, v := range values {
		t, err := Check(fmt.Sprintf("%s[%d]", field, i), v)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Redact returns value as Text when it passes the screen, and otherwise the
// placeholder "[screened:<pattern>]". It is for audit detail and other context
// that must be kept even when it carries a secret.
func Redact(value string) Text {
	if _, err := Check("", value); err != nil {
		if r, ok := err.(*Refusal); ok {
			return Text{s: "[screened:" + r.Pattern + "]"}
		}
	}
	return Text{s: value}
}
