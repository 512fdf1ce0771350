package nlsql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Model asks a model behind an OpenAI-compatible chat completions API for the SQL of a
// question (DP_LLM_BASE_URL, DP_LLM_API_KEY, DP_LLM_MODEL). What it answers is only a
// proposal: the caller checks it like any user SQL and dry-runs it with the planner.
type Model struct {
	BaseURL, APIKey, Name string
	Client                *http.Client
}

// modelTimeout bounds one answer of the model.
const modelTimeout = 20 * time.Second

const systemPrompt = `You translate questions about a project's data into one PostgreSQL SELECT statement.
Use only the tables and columns listed, written exactly as listed (a table name may contain a dot: write it as given).
Join tables only along the relationships listed. Never write anything but a single SELECT (no other statements, no comments).
A column's role says how it combines: sum an amount or a count; never sum a value (a unit price beside a quantity, a rate, a score) or an identifier.
Answer with the SQL alone.`

// Prompt is the user message: the schema with known values and relationships, then the
// question.
func Prompt(question string, s Schema) string {
	var b strings.Builder
	b.WriteString("Tables:\n")
	for _, t := range s.Tables {
		fmt.Fprintf(&b, "- %s (dataset %q)\n", t.Ref, t.Dataset)
		for _, c := range t.Columns {
			fmt.Fprintf(&b, "    %s %s", c.Name, c.Type)
			if c.Label != "" && c.Label != c.Name {
				fmt.Fprintf(&b, " (%q)", c.Label)
			}
			if c.Role != "" {
				fmt.Fprintf(&b, " role: %s", c.Role)
			}
			if len(c.Values) > 0 {
				vs := c.Values
				if len(vs) > 12 {
					vs = vs[:12]
				}
				fmt.Fprintf(&b, " values: %s", strings.Join(vs, ", "))
			}
			b.WriteString("\n")
		}
		if t.System && t.GeneratedID {
			b.WriteString("    (rows also have id bigint, created_at timestamptz, updated_at timestamptz)\n")
		} else if t.System {
			b.WriteString("    (rows also have created_at timestamptz, updated_at timestamptz)\n")
		}
	}
	if len(s.Relations) > 0 {
		b.WriteString("Relationships:\n")
		for _, r := range s.Relations {
			fmt.Fprintf(&b, "- %s.%s references %s.%s\n", r.From, r.FromColumn, r.To, r.ToColumn)
		}
	}
	fmt.Fprintf(&b, "Question: %s\n", question)
	return b.String()
}

var fenced = regexp.MustCompile("(?s)```(?:sql|postgresql)?\\s*(.*?)```")

// SQL asks the model for the SQL of question.
func (m *Model) SQL(ctx context.Context, question string, s Schema) (string, error) {
	sql, err := m.Chat(ctx, systemPrompt, Prompt(question, s))
	if err != nil {
		return "", err
	}
	if m := fenced.FindStringSubmatch(sql); m != nil {
		sql = m[1]
	}
	sql = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	if sql == "" {
		return "", errors.New("the model answered no SQL")
	}
	return sql, nil
}

// Chat sends one system and one user message and answers the model's reply.
func (m *Model) Chat(ctx context.Context, system, user string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, modelTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"model": m.Name, "temperature": 0,
		"messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": user}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(m.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if m.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	client := m.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = res.Body.Close() }() // read-only: nothing to lose at Close
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the model answered %d: %.200s", res.StatusCode, raw)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return "", errors.New("the model's answer has no message")
	}
	return out.Choices[0].Message.Content, nil
}
