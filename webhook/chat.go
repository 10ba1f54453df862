package webhook

import (
	"encoding/json"
	"strings"
)

// chatEscape escapes what Slack's text reads as markup (its "Escaping text"
// rules): &, < and >. Mattermost and Rocket.Chat show them as Slack does.
var chatEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// ChatBody is a chat room's message: Slack's incoming-webhook JSON,
// {"text": text}, which Mattermost and Rocket.Chat take too.
func ChatBody(text string) []byte {
	b, _ := json.Marshal(struct {
		Text string `json:"text"`
	}{chatEscape.Replace(text)})
	return b
}
