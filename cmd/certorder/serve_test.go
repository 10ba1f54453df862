package main

import (
	"os"
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{in: "./certorder.db", want: "./certorder.db"},
		{in: "postgres://u:s3cret@db:5432/x?sslmode=require", want: "postgres://u:xxxxx@db:5432/x?sslmode=require"},
		{in: "postgres://u@db/x?password=s3cret&sslmode=disable", want: "postgres://u@db/x?password=xxxxx&sslmode=disable"},
		{in: "postgres://u@db/x?PassWord=s3cret", want: "postgres://u@db/x?PassWord=xxxxx"},
		{in: "postgres://u@db/x?passfile=/etc/pgpass", want: "postgres://u@db/x?passfile=/etc/pgpass"},
		{in: "host=db user=u password=s3cret dbname=x", want: "host=db user=u password=xxxxx dbname=x"},
		{in: "host=db password = 's3 cret' dbname=x", want: "host=db password = xxxxx dbname=x"},
	} {
		got := redactDSN(tc.in)
		if got != tc.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every option of serve is in docs/OPERATIONS.md, with its variable.
func TestOptionsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range (&serveConfig{}).options() {
		row := "| `--" + o.flag + "` | "
		if o.flag == "" { // a variable alone
			row = "| (none) | "
		}
		if o.env != "" {
			row += "`" + o.env + "` |"
		}
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/OPERATIONS.md has no row %q", row)
		}
	}
}
