"""What people read: terminal tables, the HTML report of a sweep, figures."""
