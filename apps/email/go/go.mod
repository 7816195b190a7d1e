module promptly/apps/email

go 1.19
