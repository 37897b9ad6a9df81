module columnsums

go 1.22
