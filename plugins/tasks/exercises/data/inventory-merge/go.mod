module inventorymerge

go 1.22
