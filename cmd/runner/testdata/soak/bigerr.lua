-- Raises an error of 8 MiB: the soak's crash with a huge error.
return { main = function() error(string.rep("E", 8 * 1024 * 1024)) end }
