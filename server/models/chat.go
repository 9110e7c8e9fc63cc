package models

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/hearth-memory/hearth/server/models/wire"
)

// Size limits of what a model server sends back.
const (
	maxChatReply = 4 << 20
	maxModelList = 4 << 20
)

// client speaks one wire format to one server.
type client interface {
	// chat sends req to model and returns the reply's content and the
	// tokens the server reported (zero when it reported none).
	chat(ctx context.Context, model string, req *Request) ([]byte, Usage, error)
	// probe lists the server's models.
	probe(ctx context.Context) ([]string, error)
}

// message is one chat message on both wire formats.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func messages(req *Request) []message {
	return []message{{Role: "system", Content: req.System}, {Role: "user", Content: req.User}}
}

// ollamaClient speaks Ollama's native API: /api/tags and /api/chat with
// stream false, think false and the schema as format.
type ollamaClient struct {
	base string
	hc   *http.Client
}

type ollamaOptions struct {
	Temperature float64 `json:"temperature"`
	NumPredict  int     `json:"num_predict,omitempty"`
	NumCtx      int     `json:"num_ctx,omitempty"`
}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []message       `json:"messages"`
	Stream   bool            `json:"stream"`
	Format   json.RawMessage `json:"format"`
	Think    bool            `json:"think"`
	Options  ollamaOptions   `json:"options"`
}

type ollamaChatResponse struct {
	Message *struct {
		Content string `json:"content"`
	} `json:"message"`
	Done            bool   `json:"done"`
	Error           string `json:"error"`
	PromptEvalCount int64  `json:"prompt_eval_count"`
	EvalCount       int64  `json:"eval_count"`
}

func (c *ollamaClient) chat(ctx context.Context, model string, req *Request) ([]byte, Usage, error) {
	body, err := wire.Marshal(ollamaChatRequest{
		Model: model, Messages: messages(req), Stream: false, Format: req.Schema.JSON(), Think: false,
		Options: ollamaOptions{Temperature: 0, NumPredict: req.MaxTokens, NumCtx: req.ContextTokens},
	})
	if err != nil {
		return nil, Usage{}, err
	}
	b, err := wire.Do(ctx, c.hc, c.base+"/api/chat", body, maxChatReply)
	if err != nil {
		return nil, Usage{}, err
	}
	return decodeOllamaChat(b)
}

// decodeOllamaChat returns the content of a non-streamed /api/chat reply
// and its token counts (prompt_eval_count, eval_count).
func decodeOllamaChat(b []byte) ([]byte, Usage, error) {
	var resp ollamaChatResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, Usage{}, wire.Bad("malformed reply")
	}
	u := reported(resp.PromptEvalCount, resp.EvalCount)
	switch {
	case resp.Error != "":
		return nil, u, wire.Bad("error in reply: %s", resp.Error)
	case resp.Message == nil:
		return nil, u, wire.Bad("reply has no message")
	case !resp.Done:
		return nil, u, wire.Bad("reply not done")
	}
	return []byte(resp.Message.Content), u, nil
}

type ollamaTags struct {
	Models *[]struct {
		Name  string `json:"name"`
		Model string `json:"model"`
	} `json:"models"`
}

func (c *ollamaClient) probe(ctx context.Context) ([]string, error) {
	b, err := wire.Do(ctx, c.hc, c.base+"/api/tags", nil, maxModelList)
	if err != nil {
		return nil, err
	}
	return decodeOllamaTags(b)
}

func decodeOllamaTags(b []byte) ([]string, error) {
	var tags ollamaTags
	if err := json.Unmarshal(b, &tags); err != nil || tags.Models == nil {
		return nil, wire.Bad("not an Ollama model list")
	}
	names := make([]string, 0, len(*tags.Models))
	for _, m := range *tags.Models {
		name := m.Name
		if name == "" {
			name = m.Model
		}
		names = append(names, name)
	}
	return names, nil
}

// openAIClient speaks the OpenAI-style API of llama-server and llama-swap:
// /v1/models and /v1/chat/completions with thinking off and the schema as
// response_format json_schema.
type openAIClient struct {
	base string // ends in /v1
	hc   *http.Client
}

type openAIJSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

type openAIResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema openAIJSONSchema `json:"json_schema"`
}

type openAIChatRequest struct {
	Model              string               `json:"model"`
	Messages           []message            `json:"messages"`
	Stream             bool                 `json:"stream"`
	Temperature        float64              `json:"temperature"`
	MaxTokens          int                  `json:"max_tokens,omitempty"`
	ResponseFormat     openAIResponseFormat `json:"response_format"`
	ChatTemplateKwargs struct {
		EnableThinking bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
}

type openAIChatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func (c *openAIClient) chat(ctx context.Context, model string, req *Request) ([]byte, Usage, error) {
	r := openAIChatRequest{
		Model: model, Messages: messages(req), Stream: false, Temperature: 0, MaxTokens: req.MaxTokens,
		ResponseFormat: openAIResponseFormat{Type: "json_schema",
			JSONSchema: openAIJSONSchema{Name: req.Schema.Name(), Strict: true, Schema: req.Schema.JSON()}},
	}
	r.ChatTemplateKwargs.EnableThinking = false
	body, err := wire.Marshal(r)
	if err != nil {
		return nil, Usage{}, err
	}
	b, err := wire.Do(ctx, c.hc, c.base+"/chat/completions", body, maxChatReply)
	if err != nil {
		return nil, Usage{}, err
	}
	return decodeOpenAIChat(b)
}

// decodeOpenAIChat returns the content of the first choice and the token
// counts of usage (prompt_tokens, completion_tokens).
func decodeOpenAIChat(b []byte) ([]byte, Usage, error) {
	var resp openAIChatResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, Usage{}, wire.Bad("malformed reply")
	}
	u := reported(resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == nil {
		return nil, u, wire.Bad("reply has no content")
	}
	return []byte(*resp.Choices[0].Message.Content), u, nil
}

type openAIModels struct {
	Data *[]struct {
		ID string `json:"id"`
	} `json:"data"`
}

func (c *openAIClient) probe(ctx context.Context) ([]string, error) {
	b, err := wire.Do(ctx, c.hc, c.base+"/models", nil, maxModelList)
	if err != nil {
		return nil, err
	}
	return decodeOpenAIModels(b)
}

func decodeOpenAIModels(b []byte) ([]string, error) {
	var list openAIModels
	if err := json.Unmarshal(b, &list); err != nil || list.Data == nil {
		return nil, wire.Bad("not an OpenAI model list")
	}
	ids := make([]string, 0, len(*list.Data))
	for _, m := range *list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// newClient returns the client for base's wire format.
func newClient(base string, hc *http.Client) client {
	if wire.FormatOf(base) == wire.OpenAI {
		return &openAIClient{base: base, hc: hc}
	}
	return &ollamaClient{base: base, hc: hc}
}

// checkURL reports whether base is an absolute http(s) URL.
func checkURL(base string) bool {
	u, err := url.Parse(base)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		!strings.ContainsAny(base, "?#")
}
