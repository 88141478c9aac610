return { main = function() end }
