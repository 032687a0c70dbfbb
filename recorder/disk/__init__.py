"""Files on disk, as the jobs write them: `atomic` (whole-file writes by rename, a new file's
name claimed by link, temporary files in a hidden locked folder per process) and `locking`
(a file several processes append to, in turns)."""
