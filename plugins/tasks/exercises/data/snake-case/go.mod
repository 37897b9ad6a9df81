module snakecase

go 1.22
