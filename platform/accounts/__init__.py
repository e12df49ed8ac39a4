"""Accounts: users who sign in with their email address."""
