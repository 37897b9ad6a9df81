module quarterhour

go 1.22
