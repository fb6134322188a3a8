"""What people and programs read: tables, markdown and the versioned JSON of each command's output."""
