package snakecase

import "testing"

func TestSnake(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"name", "name"},
		{"Name", "name"},
		{"userName", "user_name"},
		{"UserName", "user_name"},
		{"userID", "user_id"},
		{"HTTPServer", "http_server"},
		{"ServeHTTP", "serve_http"},
		{"Vector3D", "vector3_d"},
		{"already_snake", "already_snake"},
		{"Mixed_Case", "mixed_case"},
		{"ID", "id"},
		{"parseURLQuery", "parse_url_query"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Snake(tt.in); got != tt.want {
				t.Errorf("Snake(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
