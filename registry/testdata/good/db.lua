return {main = function() end}
