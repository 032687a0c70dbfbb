"""Files on disk, as the jobs read and write them: `transcripts` (the `.http` files of the
folders named, in number order, exports passed over; `load` and `dump`), `atomic` (whole-file
writes by rename, a new file's name claimed by link, temporary files in a hidden locked
folder per process) and `locking` (a file several processes append to, in turns)."""
