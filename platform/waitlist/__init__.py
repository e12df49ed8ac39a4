"""The waitlist and beta invites: who asked to join, who was invited, who signed up."""
